package create

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
)

const stdinJob = `apiVersion: muster.dev/v1alpha1
kind: TrainingJob
metadata: {name: delta, namespace: team}
spec:
  roles: [{name: w, template: {spec: {containers: [{name: main, image: busybox}]}}}]
`

func TestCreate(t *testing.T) {
	cases := map[string]struct {
		args  []string
		stdin string
		want  []string // jobs in namespace team afterwards
	}{
		"a folder":         {args: []string{"-f", "testdata/jobs"}, want: []string{"alpha", "beta"}},
		"a folder, -R":     {args: []string{"-f", "testdata/jobs", "-R"}, want: []string{"alpha", "beta", "gamma"}},
		"a file and stdin": {args: []string{"-f", "testdata/jobs/nested/c.json", "-f", "-"}, stdin: stdinJob, want: []string{"delta", "gamma"}},
		"-o name":          {args: []string{"-f", "-", "-o", "name"}, stdin: stdinJob, want: []string{"delta"}},
		"a server dry run": {args: []string{"-f", "-", "--dry-run=server"}, stdin: stdinJob},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{})
			r := clitest.RunWithInput(t, NewCmd, f, tc.stdin, tc.args...)
			if r.Error != nil {
				t.Fatalf("error: %v\nstderr: %s", r.Error, r.Err)
			}
			clitest.Golden(t, "create-"+strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), ",", ""), r.Out+r.Err)
			var list musterv1.TrainingJobList
			if err := f.Jobs.List(context.Background(), &list, client.InNamespace("team")); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range list.Items {
				got = append(got, j.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("jobs %v, want %v", got, tc.want)
			}
		})
	}
}

// The API server's objections are printed one field a line, and the other
// jobs are still created.
func TestCreateShowsFieldErrors(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{Intercept: &interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == "alpha" {
				return apierrors.NewInvalid(schema.GroupKind{Group: "muster.dev", Kind: "TrainingJob"}, "alpha", field.ErrorList{
					field.Invalid(field.NewPath("spec", "roles").Index(0).Child("replicas"), 20000, "must be at most 10000"),
					field.Required(field.NewPath("spec", "roles").Index(0).Child("template", "spec", "containers"), "a role runs at least one container"),
				})
			}
			return c.Create(ctx, obj, opts...)
		},
	}})
	r := clitest.Run(t, NewCmd, f, "-f", "testdata/jobs")
	if r.Error == nil || !strings.Contains(r.Error.Error(), "1 of 2 jobs not created: alpha") {
		t.Fatalf("error %v", r.Error)
	}
	clitest.Golden(t, "create-field-errors", r.Out+r.Err)
}

func TestCreateErrors(t *testing.T) {
	cases := map[string]struct {
		stdin    string
		args     []string
		explicit bool
		want     string
	}{
		"a misspelt field": {stdin: strings.Replace(stdinJob, "roles:", "rolez:", 1), want: `stdin (document 1): strict decoding error: unknown field "spec.rolez"`},
		"another kind":     {stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", want: "a ConfigMap, not a TrainingJob: use kubectl for other objects"},
		"nothing":          {stdin: "---\n", want: "no TrainingJob in -"},
		"two namespaces":   {stdin: strings.Replace(stdinJob, "team", "other", 1), explicit: true, want: "trainingjob delta says metadata.namespace other, the command -n team: drop one of them"},
		"a missing file":   {args: []string{"-f", "nope.yaml"}, want: "-f nope.yaml: stat nope.yaml: no such file or directory"},
		"a bad dry run":    {args: []string{"-f", "-", "--dry-run=client"}, stdin: stdinJob, want: "--dry-run=client: none or server"},
		"already there":    {stdin: strings.Replace(stdinJob, "delta", "pet", 1), want: "trainingjob team/pet already exists: delete it first (muster delete pet -n team) or give this one another metadata.name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
			f.Explicit = tc.explicit
			args := tc.args
			if args == nil {
				args = []string{"-f", "-"}
			}
			r := clitest.RunWithInput(t, NewCmd, f, tc.stdin, args...)
			if r.Error == nil || !strings.Contains(r.Error.Error()+r.Err, tc.want) {
				t.Fatalf("error %v, stderr %q; want %q", r.Error, r.Err, tc.want)
			}
		})
	}
}
