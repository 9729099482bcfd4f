package scale

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
	"github.com/muster-dev/muster/internal/testutil"
)

// scaleSubresource plays the API server's /scale of a TrainingJob, which
// the fake client does not know: spec.scaling.replicas.
var scaleSubresource = &interceptor.Funcs{
	SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		var o client.SubResourceUpdateOptions
		o.ApplyOptions(opts)
		scale := o.SubResourceBody.(*autoscalingv1.Scale)
		job := &musterv1.TrainingJob{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), job); err != nil {
			return err
		}
		job.Spec.Scaling.Replicas = &scale.Spec.Replicas
		return c.Update(ctx, job)
	},
}

func TestScale(t *testing.T) {
	cases := map[string]struct {
		args     []string
		scaling  int32
		launcher int32
	}{
		"the scalable roles": {args: []string{"pet", "--replicas", "4"}, scaling: 4, launcher: 1},
		"a fixed role":       {args: []string{"pet", "--role", "launcher", "--replicas", "0"}, scaling: 3, launcher: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{Intercept: scaleSubresource}, clitest.ElasticJob())
			r := clitest.Run(t, NewCmd, f, tc.args...)
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			clitest.Golden(t, "scale-"+strings.ReplaceAll(name, " ", "-"), r.Out)
			job := &musterv1.TrainingJob{}
			if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "pet"}, job); err != nil {
				t.Fatal(err)
			}
			if got := *job.Spec.Scaling.Replicas; got != tc.scaling {
				t.Errorf("spec.scaling.replicas = %d, want %d", got, tc.scaling)
			}
			if got := *job.Spec.Roles[0].Replicas; got != tc.launcher {
				t.Errorf("launcher replicas = %d, want %d", got, tc.launcher)
			}
		})
	}
}

func TestTarget(t *testing.T) {
	elastic := testutil.MakeJob("e", "ns").Role("launcher", 1).Role("worker", 4).Elastic(2, 4).Obj()
	finished := elastic.DeepCopy()
	finished.Status.Phase = musterv1.PhaseSucceeded
	finished.Status.Conditions = []metav1.Condition{{Type: string(musterv1.ConditionSucceeded), Status: metav1.ConditionTrue}}
	cases := map[string]struct {
		job      *musterv1.TrainingJob
		role     string
		replicas int32
		want     int
		wantErr  string
	}{
		"the scalable roles by default": {job: elastic, replicas: 3, want: -1},
		"below the range":               {job: elastic, replicas: 1, wantErr: "--replicas 1 is out of range: its scalable roles [worker] take 2 to 4"},
		"above the range":               {job: elastic, replicas: 5, wantErr: "out of range"},
		"a named role":                  {job: elastic, role: "launcher", replicas: 2, want: 0},
		"a scalable role named":         {job: elastic, role: "worker", replicas: 2, wantErr: "role worker is scalable"},
		"an unknown role":               {job: elastic, role: "ps", wantErr: `no role "ps": its roles are [launcher worker]`},
		"the only role":                 {job: testutil.MakeJob("j", "ns").Role("w", 2).Obj(), replicas: 3, want: 0},
		"several roles, none named":     {job: testutil.MakeJob("j", "ns").Role("a", 1).Role("b", 1).Obj(), wantErr: "name one with --role"},
		"a finished job":                {job: finished, replicas: 3, wantErr: "has finished (Succeeded)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Target(tc.job, tc.role, tc.replicas)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Target = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestScaleNeedsReplicas(t *testing.T) {
	r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, clitest.ElasticJob()), "pet")
	if r.Error == nil || !strings.Contains(r.Error.Error(), `"replicas" not set`) {
		t.Fatalf("got %v", r.Error)
	}
}
