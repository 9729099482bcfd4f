package importcmd

import (
	"context"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
)

const stdinJob = `apiVersion: elastic.pytorch.org/v1alpha1
kind: ElasticJob
metadata: {name: imagenet}
spec:
  rdzvEndpoint: etcd:2379
  minReplicas: 1
  maxReplicas: 2
  replicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: worker, image: busybox}]}}
`

func TestImport(t *testing.T) {
	cases := map[string]struct {
		args     []string
		stdin    string
		explicit bool
		want     []string // jobs in namespace team afterwards
	}{
		"a folder":            {args: []string{"-f", "testdata"}},
		"stdin":               {args: []string{"-f", "-"}, stdin: stdinJob},
		"another namespace":   {args: []string{"-f", "testdata/volcano.yaml"}, explicit: true},
		"apply":               {args: []string{"-f", "testdata/framework.yaml", "-f", "-", "--apply"}, stdin: stdinJob, want: []string{"fw", "imagenet"}},
		"apply, -n overrides": {args: []string{"-f", "testdata/volcano.yaml", "--apply"}, explicit: true, want: []string{"ctr"}},
		// The fake client does not default; a real API server's answer is
		// in test/integration (imported_test.go). Nothing is created.
		"server dry run": {args: []string{"-f", "testdata/volcano.yaml", "--dry-run=server"}},
		"names":          {args: []string{"-f", "testdata/volcano.yaml", "-f", "testdata/framework.yaml", "-o", "name"}},
		"json":           {args: []string{"-f", "-", "-o", "json"}, stdin: stdinJob},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{})
			f.Explicit = tc.explicit
			r := clitest.RunWithInput(t, NewCmd, f, tc.stdin, tc.args...)
			if r.Error != nil {
				t.Fatalf("error: %v\nstderr: %s", r.Error, r.Err)
			}
			clitest.Golden(t, "import-"+strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), ",", ""), "stdout:\n"+r.Out+"stderr:\n"+r.Err)
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

func TestImportErrors(t *testing.T) {
	cases := map[string]struct {
		stdin string
		args  []string
		want  string
	}{
		"an unknown kind": {stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			want: `stdin (document 1): kind "ConfigMap" of apiVersion "v1" is not one muster import converts`},
		"nothing":        {stdin: "---\n", want: "no job to import in -"},
		"strict":         {args: []string{"-f", "testdata/framework.yaml", "--strict"}, want: "--strict: 1 fields could not be carried over"},
		"a missing file": {args: []string{"-f", "nope.yaml"}, want: "-f nope.yaml: stat nope.yaml: no such file or directory"},
		"no runtime": {stdin: "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t, namespace: team}\nspec: {runtimeRef: {name: torch-distributed}}\n",
			want: "the ClusterTrainingRuntime torch-distributed is not in the input"},
		"a bad template": {stdin: strings.Replace(stdinJob, "image: busybox", "imag: busybox", 1),
			want: `spec.replicaSpecs.Worker.template: json: unknown field "imag"`},
		"already there": {args: []string{"-f", "-", "--apply"}, stdin: strings.Replace(stdinJob, "imagenet", "pet", 1),
			want: "trainingjob team/pet already exists"},
		"a client dry run":  {args: []string{"-f", "-", "--dry-run=client"}, stdin: stdinJob, want: "--dry-run=client: none or server"},
		"an unknown output": {args: []string{"-f", "-", "-o", "table"}, stdin: stdinJob, want: `unable to match a printer suitable for the output format "table"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
			args := tc.args
			if args == nil {
				args = []string{"-f", "-"}
			}
			r := clitest.RunWithInput(t, NewCmd, f, tc.stdin, args...)
			if r.Error == nil || !strings.Contains(r.Error.Error()+r.Err, tc.want) {
				t.Fatalf("error %v, stderr %q; want %q", r.Error, r.Err, tc.want)
			}
			if tc.args != nil && slices.Contains(tc.args, "--strict") && r.Out != "" {
				t.Errorf("--strict wrote %q", r.Out)
			}
		})
	}
}
