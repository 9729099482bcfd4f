// Package describe implements `muster describe`: everything a job's status
// says, and its recent events.
package describe

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/cli/printers"
)

const example = `  # Phase, conditions, restarts and their budget, roles, tasks, recent
  # failures, the elastic world, the autoscaler, the gang, attempts, events
  muster describe pet`

// Options are describe's flags and what Complete derives from them.
type Options struct {
	Names     []string
	Namespace string
	Client    client.Client
	Kube      kubernetes.Interface
	factory   cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the describe command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	return &cobra.Command{
		Use:               "describe JOB...",
		Short:             "Show everything in a job's status, and its recent events",
		Example:           example,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
}

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.Names, o.factory = args, f
	var err error
	if o.Namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	if o.Client, err = f.Client(); err != nil {
		return err
	}
	o.Kube, err = f.KubeClient()
	return err
}

// Run describes each job in turn.
func (o *Options) Run(ctx context.Context) error {
	for i, name := range o.Names {
		job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, name)
		if err != nil {
			return err
		}
		events, err := cmdutil.JobEvents(ctx, o.Kube, job, false)
		if err != nil {
			// The status is worth showing even when events may not be read.
			fmt.Fprintf(o.ErrOut, "warning: events of trainingjob %s/%s: %v\n", job.Namespace, job.Name, err)
		}
		if i > 0 {
			fmt.Fprintln(o.Out)
		}
		if err := printers.Describe(o.Out, job, events, o.factory.Clock().Now()); err != nil {
			return err
		}
	}
	return nil
}
