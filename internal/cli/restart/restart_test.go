package restart

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
)

func TestRestart(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
	first := clitest.Run(t, NewCmd, f, "pet")
	again := clitest.Run(t, NewCmd, f, "pet")
	if first.Error != nil || again.Error != nil {
		t.Fatal(first.Error, again.Error)
	}
	clitest.Golden(t, "restart", first.Out+again.Out)
	job := &musterv1.TrainingJob{}
	if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "pet"}, job); err != nil {
		t.Fatal(err)
	}
	if want := clitest.Now.Format("2006-01-02T15:04:05Z"); job.Spec.Run.RestartRequest != want {
		t.Errorf("spec.run.restartRequest = %q, want %q", job.Spec.Run.RestartRequest, want)
	}
}

func TestRestartRefusesAJobThatDoesNotRun(t *testing.T) {
	suspended := clitest.ElasticJob()
	suspended.Status.Phase = musterv1.PhaseSuspended
	stopped := clitest.ElasticJob()
	stopped.Spec.Run.Execution = musterv1.ExecutionStop
	cases := map[string]struct {
		factory *clitest.Factory
		args    []string
		want    string
	}{
		"finished":  {clitest.NewFactory(clitest.Options{}, clitest.FailedJob()), []string{"bad"}, "job bad has finished (Failed): a finished job does not restart"},
		"suspended": {clitest.NewFactory(clitest.Options{}, suspended), []string{"pet"}, "job pet is suspended"},
		"stopped":   {clitest.NewFactory(clitest.Options{}, stopped), []string{"pet"}, "job pet is stopped"},
		"missing":   {clitest.NewFactory(clitest.Options{}), []string{"nope"}, "trainingjob team/nope not found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, NewCmd, tc.factory, tc.args...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want %q", r.Error, tc.want)
			}
		})
	}
}
