// Package delete implements `muster delete`: jobs go, and with them their
// pods, Service and gang objects.
package delete

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/cli/progress"
	"github.com/muster-dev/muster/internal/cli/wait"
)

const example = `  # Delete a job and wait until its pods are gone
  muster delete pet

  # Do not wait
  muster delete pet other --wait=false`

// Options are delete's flags and what Complete derives from them.
type Options struct {
	Wait           bool
	Timeout        time.Duration
	IgnoreNotFound bool

	Names     []string
	Namespace string
	Client    client.WithWatch
	factory   cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the delete command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := &cobra.Command{
		Use:               "delete JOB...",
		Short:             "Delete jobs and, with them, their pods, Service and gang objects",
		Example:           example,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 0),
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, func() error { return nil }, o.Run),
	}
	cmd.Flags().BoolVar(&o.Wait, "wait", true, "wait until each job is gone; its pods go first")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long --wait waits; a negative value waits without limit")
	cmd.Flags().BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "succeed for jobs that do not exist")
	return cmd
}

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.Names, o.factory = args, f
	var err error
	if o.Namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	o.Client, err = f.Client()
	return err
}

// Run deletes every job, then waits for them.
func (o *Options) Run(ctx context.Context) error {
	var deleted []string
	for _, name := range o.Names {
		job := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name}}
		// Foreground: the job stays visible until its pods are gone, so no
		// task instance outlives it.
		err := o.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground))
		if apierrors.IsNotFound(err) && o.IgnoreNotFound {
			continue
		}
		if err != nil {
			return cmdutil.JobError(err, o.Namespace, name)
		}
		fmt.Fprintf(o.Out, "%s deleted\n", cmdutil.Ref(name))
		deleted = append(deleted, name)
	}
	if !o.Wait || len(deleted) == 0 {
		return nil
	}
	w := &wait.Options{Condition: wait.Condition{Delete: true}, Timeout: o.Timeout, Namespace: o.Namespace, Client: o.Client, IOStreams: o.IOStreams}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	p := progress.New(o.IOStreams, o.factory.Clock())
	defer p.Done()
	for _, name := range deleted {
		if err := w.WaitOne(ctx, p, name); err != nil {
			return err
		}
	}
	return nil
}
