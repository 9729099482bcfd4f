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
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Options are restart's.
type Options struct {
	Names     []string
	Namespace string
	Client    client.Client
	Clock     clock.PassiveClock

	genericiooptions.IOStreams
}

// NewCmd returns the restart command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
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
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, func() error { return nil }, o.Run),
	}
}

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.Names = args
	o.Clock = f.Clock()
	var err error
	if o.Namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	o.Client, err = f.Client()
	return err
}

// Run asks each job for a new attempt, after checking that it runs.
func (o *Options) Run(ctx context.Context) error {
	for _, name := range o.Names {
		job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, name)
		if err != nil {
			return err
		}
		if err := restartable(name, job); err != nil {
			return err
		}
		request := o.Clock.Now().UTC().Format(time.RFC3339)
		if request == job.Spec.Run.RestartRequest {
			fmt.Fprintf(o.Out, "%s restart already requested at %s\n", cmdutil.Ref(name), request)
			continue
		}
		patch := fmt.Appendf(nil, `{"spec":{"run":{"restartRequest":%q}}}`, request)
		if err := o.Client.Patch(ctx, job, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			return cmdutil.JobError(err, o.Namespace, name)
		}
		fmt.Fprintf(o.Out, "%s restart requested: attempt %d will replace every pod\n", cmdutil.Ref(name), job.Status.Attempt+1)
	}
	return nil
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
