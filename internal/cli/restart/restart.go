// Package restart implements `muster restart`: a new attempt of a running
// job on demand (Volcano's RestartJob command), through
// spec.run.restartRequest.
package restart

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Options are restart's.
type Options struct {
	cmdutil.JobPatch
	Clock clock.PassiveClock
}

// NewCmd returns the restart command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{JobPatch: cmdutil.JobPatch{IOStreams: streams}}
	return &cobra.Command{
		Use:   "restart JOB...",
		Short: "Start a new attempt of running jobs: every pod is replaced, and the restart is not charged",
		Long: "Restart sets spec.run.restartRequest to the time of the request. The operator then starts a\n" +
			"new attempt, as a RestartJob rule would: every pod of the job is deleted and made anew (the\n" +
			"rendezvous store too), status.attempt goes up by one, and the restart is counted in\n" +
			"status.restarts.total but never against spec.failurePolicy.backoffLimit.\n" +
			"Only a running job restarts: a suspended one starts new pods when it resumes anyway.",
		Example:           "  muster restart pet",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 0),
		RunE: cmdutil.RunE(func(a []string) error {
			o.Clock = f.Clock()
			return o.Complete(f, a)
		}, func() error { return nil }, o.Run),
	}
}

// Run asks each job for a new attempt, after checking that it runs.
func (o *Options) Run(ctx context.Context) error {
	return o.JobPatch.Run(ctx, func(name string, job *musterv1.TrainingJob) (cmdutil.Change, error) {
		if err := restartable(name, job); err != nil {
			return cmdutil.Change{}, err
		}
		request := o.Clock.Now().UTC().Format(time.RFC3339)
		if request == job.Spec.Run.RestartRequest {
			return cmdutil.Change{Said: "restart already requested at " + request}, nil
		}
		return cmdutil.Change{
			Patches: []string{fmt.Sprintf(`{"spec":{"run":{"restartRequest":%q}}}`, request)},
			Said:    fmt.Sprintf("restart requested: attempt %d will replace every pod", job.Status.Attempt+1),
		}, nil
	})
}

// restartable says why a job cannot restart now, or nil.
func restartable(name string, job *musterv1.TrainingJob) error {
	switch {
	case job.Status.Finished():
		return fmt.Errorf("job %s has finished (%s): a finished job does not restart; create it anew", name, job.Status.Phase)
	case job.Spec.Run.Execution == musterv1.ExecutionStop:
		return fmt.Errorf("job %s is stopped: a stopped job does not restart", name)
	case job.Spec.Run.Execution == musterv1.ExecutionCreate:
		return fmt.Errorf("job %s is held (spec.run.execution Create): it has nothing to restart; start it instead", name)
	case job.Status.Phase == musterv1.PhaseSuspended || job.Status.IsTrue(musterv1.ConditionSuspended):
		return fmt.Errorf("job %s is suspended: it has no pods to restart, and resuming it (muster resume) makes new ones", name)
	case job.Status.StartTime == nil:
		return fmt.Errorf("job %s has not started yet: it has nothing to restart", name)
	}
	return nil
}
