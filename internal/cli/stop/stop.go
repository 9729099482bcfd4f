// Package stop implements `muster stop`: spec.run.execution=Stop ends a job
// at once as Failed, with reason Stopped, and keeps it and its status.
package stop

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Options are stop's.
type Options struct {
	Names     []string
	Namespace string
	Client    client.Client

	genericiooptions.IOStreams
}

// NewCmd returns the stop command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
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

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.Names = args
	var err error
	if o.Namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	o.Client, err = f.Client()
	return err
}

// Run stops each job that has not ended.
func (o *Options) Run(ctx context.Context) error {
	for _, name := range o.Names {
		job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, name)
		if err != nil {
			return err
		}
		switch {
		case job.Spec.Run.Execution == musterv1.ExecutionStop:
			fmt.Fprintf(o.Out, "%s was already stopped\n", cmdutil.Ref(name))
			continue
		case job.Status.Finished():
			return fmt.Errorf("job %s has already finished (%s): there is nothing to stop", name, job.Status.Phase)
		}
		patch := []byte(`{"spec":{"run":{"execution":"Stop"}}}`)
		if err := o.Client.Patch(ctx, job, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			return cmdutil.JobError(err, o.Namespace, name)
		}
		fmt.Fprintf(o.Out, "%s stopped\n", cmdutil.Ref(name))
	}
	return nil
}
