// Package stop implements `muster stop`: spec.run.execution=Stop ends a job
// at once as Failed, with reason Stopped, and keeps it and its status.
package stop

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Options are stop's.
type Options struct {
	cmdutil.JobPatch
}

// NewCmd returns the stop command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{JobPatch: cmdutil.JobPatch{IOStreams: streams}}
	return &cobra.Command{
		Use:   "stop JOB...",
		Short: "End jobs now as Failed (reason Stopped), keeping them and their status (spec.run.execution: Stop)",
		Long: "Stop sets spec.run.execution to Stop: the job ends at once as Failed with reason Stopped, its\n" +
			"running pods go as spec.run.cleanPodPolicy says, and the object and its status stay for\n" +
			"inspection. A stopped job cannot be started again; `muster suspend` pauses one instead.",
		Example:           "  muster stop pet",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 0),
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, func() error { return nil }, o.Run),
	}
}

// Run stops each job that has not ended.
func (o *Options) Run(ctx context.Context) error {
	return o.JobPatch.Run(ctx, func(name string, job *musterv1.TrainingJob) (cmdutil.Change, error) {
		switch {
		case job.Spec.Run.Execution == musterv1.ExecutionStop:
			return cmdutil.Change{Said: "was already stopped"}, nil
		case job.Status.Finished():
			return cmdutil.Change{}, fmt.Errorf("job %s has already finished (%s): there is nothing to stop", name, job.Status.Phase)
		}
		return cmdutil.Change{Patches: []string{`{"spec":{"run":{"execution":"Stop"}}}`}, Said: "stopped"}, nil
	})
}
