package suspend

import (
	"context"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
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
		if got := ptr.Deref(job.Spec.Run.Suspend, false); got != step.want {
			t.Fatalf("spec.run.suspend = %t, want %t", got, step.want)
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
