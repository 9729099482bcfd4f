// Package suspend implements `muster suspend` and `muster resume`: they set
// spec.run.suspend. Resuming a job a failure rule suspended changes the
// spec, which is what ends such a suspension.
package suspend

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Options are suspend's and resume's.
type Options struct {
	Suspend bool
	cmdutil.JobPatch
}

// NewSuspendCmd returns the suspend command.
func NewSuspendCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, &Options{Suspend: true, JobPatch: cmdutil.JobPatch{IOStreams: streams}}, &cobra.Command{
		Use:     "suspend JOB...",
		Short:   "Suspend jobs: their pods are deleted, the jobs are kept (spec.run.suspend)",
		Example: "  muster suspend pet",
	})
}

// NewResumeCmd returns the resume command.
func NewResumeCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, &Options{Suspend: false, JobPatch: cmdutil.JobPatch{IOStreams: streams}}, &cobra.Command{
		Use:     "resume JOB...",
		Short:   "Resume suspended jobs: their pods are created again, as a new attempt",
		Example: "  muster resume pet",
	})
}

func newCmd(f cmdutil.Factory, o *Options, cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.MinimumNArgs(1)
	cmd.ValidArgsFunction = cmdutil.JobNames(f, 0)
	cmd.RunE = cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, func() error { return nil }, o.Run)
	return cmd
}

// Run patches each job; one that is already where it was asked to go, or
// has finished, is reported and left alone.
func (o *Options) Run(ctx context.Context) error {
	return o.JobPatch.Run(ctx, func(name string, job *musterv1.TrainingJob) (cmdutil.Change, error) {
		patches := []bool{o.Suspend}
		switch {
		case job.Status.Finished():
			return cmdutil.Change{}, fmt.Errorf("job %s has finished (%s): there is nothing to %s", name, job.Status.Phase, o.verb())
		case !o.Suspend && suspendedByRule(job):
			// A failure rule's suspension holds until the spec changes,
			// whatever spec.run.suspend says: suspending and resuming
			// changes it.
			patches = []bool{true, false}
		case ptr.Deref(job.Spec.Run.Suspend, false) == o.Suspend:
			if o.Suspend {
				return cmdutil.Change{Said: "was already suspended"}, nil
			}
			return cmdutil.Change{Said: "was not suspended"}, nil
		}
		c := cmdutil.Change{Said: o.done()}
		for _, suspend := range patches {
			c.Patches = append(c.Patches, fmt.Sprintf(`{"spec":{"run":{"suspend":%t}}}`, suspend))
		}
		return c, nil
	})
}

func (o *Options) verb() string {
	if o.Suspend {
		return "suspend"
	}
	return "resume"
}

func (o *Options) done() string {
	if o.Suspend {
		return "suspended"
	}
	return "resumed"
}

// suspendedByRule is whether a failure rule holds the job suspended.
func suspendedByRule(job *musterv1.TrainingJob) bool {
	c := job.Status.Condition(musterv1.ConditionSuspended)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == musterv1.ReasonSuspendedByPolicy &&
		c.ObservedGeneration == job.Generation
}
