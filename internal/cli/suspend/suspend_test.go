package suspend

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
)

func TestSuspendAndResume(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
	var out strings.Builder
	for _, step := range []struct {
		cmd  clitest.NewCmd
		want bool
	}{{NewSuspendCmd, true}, {NewSuspendCmd, true}, {NewResumeCmd, false}, {NewResumeCmd, false}} {
		r := clitest.Run(t, step.cmd, f, "pet")
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		out.WriteString(r.Out)
		job := &musterv1.TrainingJob{}
		if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "pet"}, job); err != nil {
			t.Fatal(err)
		}
		if got := job.Spec.Run.Execution == musterv1.ExecutionSuspend; got != step.want {
			t.Fatalf("spec.run.execution = %s, want Suspend: %t", job.Spec.Run.Execution, step.want)
		}
	}
	clitest.Golden(t, "suspend-resume", out.String())
}

func TestSuspendFinished(t *testing.T) {
	r := clitest.Run(t, NewSuspendCmd, clitest.NewFactory(clitest.Options{}, clitest.FailedJob()), "bad")
	if r.Error == nil || r.Error.Error() != "job bad has finished (Failed): there is nothing to suspend" {
		t.Fatalf("got %v", r.Error)
	}
}

// A job a failure rule suspended is held until its spec changes: resume
// sets spec.run.resumeRequest, one change.
func TestResumeAJobARuleSuspended(t *testing.T) {
	job := clitest.ElasticJob()
	job.Generation = 4
	job.Spec.Run.Execution = musterv1.ExecutionStart
	job.Status.Conditions = append(job.Status.Conditions, metav1.Condition{Type: string(musterv1.ConditionSuspended),
		Status: metav1.ConditionTrue, Reason: string(musterv1.ReasonSuspendedByPolicy), ObservedGeneration: 4, Message: "a lifecycle policy suspends the job"})
	f := clitest.NewFactory(clitest.Options{}, job)
	var patches []string
	f.Jobs = interceptor.NewClient(f.Jobs, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			patches = append(patches, string(data))
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	r := clitest.Run(t, NewResumeCmd, f, "pet")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	want := []string{`{"spec":{"run":{"resumeRequest":"2026-03-01T12:00:00Z"}}}`}
	if strings.Join(patches, " ") != strings.Join(want, " ") {
		t.Fatalf("patches %q, want %q", patches, want)
	}
	if !strings.Contains(r.Out, "resumed") {
		t.Errorf("output %q", r.Out)
	}
}
