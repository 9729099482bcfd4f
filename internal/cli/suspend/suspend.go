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
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Options are suspend's and resume's.
type Options struct {
	Suspend bool

	Names     []string
	Namespace string
	Client    client.Client

	genericiooptions.IOStreams
}

// NewSuspendCmd returns the suspend command.
func NewSuspendCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, &Options{Suspend: true, IOStreams: streams}, &cobra.Command{
		Use:     "suspend JOB...",
		Short:   "Suspend jobs: their pods are deleted, the jobs are kept (spec.run.suspend)",
		Example: "  muster suspend pet",
	})
}

// NewResumeCmd returns the resume command.
func NewResumeCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, &Options{Suspend: false, IOStreams: streams}, &cobra.Command{
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

// Run patches each job; one that is already where it was asked to go, or
// has finished, is reported and left alone.
func (o *Options) Run(ctx context.Context) error {
	for _, name := range o.Names {
		job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, name)
		if err != nil {
			return err
		}
		patches := []bool{o.Suspend}
		switch {
		case job.Status.Finished():
			return fmt.Errorf("job %s has finished (%s): there is nothing to %s", name, job.Status.Phase, o.verb())
		case !o.Suspend && suspendedByRule(job):
			// A failure rule's suspension holds until the spec changes,
			// whatever spec.run.suspend says: suspending and resuming
			// changes it.
			patches = []bool{true, false}
		case ptr.Deref(job.Spec.Run.Suspend, false) == o.Suspend:
			if o.Suspend {
				fmt.Fprintf(o.Out, "%s was already suspended\n", cmdutil.Ref(name))
			} else {
				fmt.Fprintf(o.Out, "%s was not suspended\n", cmdutil.Ref(name))
			}
			continue
		}
		for _, suspend := range patches {
			patch := fmt.Appendf(nil, `{"spec":{"run":{"suspend":%t}}}`, suspend)
			if err := o.Client.Patch(ctx, job, client.RawPatch("application/merge-patch+json", patch)); err != nil {
				return cmdutil.JobError(err, o.Namespace, name)
			}
		}
		fmt.Fprintf(o.Out, "%s %s\n", cmdutil.Ref(name), o.done())
	}
	return nil
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
