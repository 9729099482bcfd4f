package stop

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
)

func TestStop(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
	first := clitest.Run(t, NewCmd, f, "pet")
	again := clitest.Run(t, NewCmd, f, "pet")
	if first.Error != nil || again.Error != nil {
		t.Fatal(first.Error, again.Error)
	}
	clitest.Golden(t, "stop", first.Out+again.Out)
	job := &musterv1.TrainingJob{}
	if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "pet"}, job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.Run.Execution != musterv1.ExecutionStop {
		t.Errorf("spec.run.execution = %q, want Stop", job.Spec.Run.Execution)
	}
}

func TestStopFinished(t *testing.T) {
	r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, clitest.FailedJob()), "bad")
	if r.Error == nil || r.Error.Error() != "job bad has already finished (Failed): there is nothing to stop" {
		t.Fatalf("got %v", r.Error)
	}
}
