// Package get implements `muster get` (and its alias `list`): jobs as a
// table, or in any format of -o.
package get

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/cli/printers"
)

const example = `  # The jobs of the current namespace
  muster get

  # Every namespace's, with attempt and gang columns
  muster get -A -o wide

  # One job as YAML, or one field of it
  muster get pet -o yaml
  muster get pet -o jsonpath='{.status.phase}'

  # Columns of your own
  muster get -o custom-columns=NAME:.metadata.name,WORLD:.status.replicas`

// Options are get's flags and what Complete derives from them.
type Options struct {
	PrintFlags    *cmdutil.PrintFlags
	AllNamespaces bool
	Selector      string

	Names     []string
	Namespace string
	Client    client.Client
	factory   cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the get command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{PrintFlags: cmdutil.NewPrintFlags(), IOStreams: streams}
	cmd := &cobra.Command{
		Use:               "get [JOB...]",
		Aliases:           []string{"list", "ls"},
		Short:             "List training jobs: phase, ready tasks, restarts, age",
		Long:              "List training jobs as a table (phase, ready tasks, restarts, age; -o wide adds the attempt, the gang backend and the gang's state), or print them in any format of -o.",
		Example:           example,
		ValidArgsFunction: cmdutil.JobNames(f, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "list the jobs of every namespace")
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "only jobs whose labels match, e.g. -l team=vision")
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

// Validate checks the flags together.
func (o *Options) Validate() error {
	if o.AllNamespaces && len(o.Names) > 0 {
		return fmt.Errorf("name jobs or pass -A, not both: a job name is looked up in one namespace (-n)")
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("-l %q: %w", o.Selector, err)
	}
	_, err := o.PrintFlags.ToPrinter(nil, false)
	return err
}

// Run reads the jobs and prints them.
func (o *Options) Run(ctx context.Context) error {
	var obj runtime.Object
	if len(o.Names) == 1 {
		job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, o.Names[0])
		if err != nil {
			return err
		}
		obj = job
	} else {
		list, err := o.list(ctx)
		if err != nil {
			return err
		}
		if len(list.Items) == 0 && o.isTable() {
			if o.AllNamespaces {
				fmt.Fprintln(o.ErrOut, "No training jobs found.")
			} else {
				fmt.Fprintf(o.ErrOut, "No training jobs found in namespace %s.\n", o.Namespace)
			}
			return nil
		}
		obj = list
	}
	now := o.factory.Clock().Now()
	p, err := o.PrintFlags.ToPrinter(func(obj runtime.Object) (*metav1.Table, error) { return printers.JobTable(obj, now) }, o.AllNamespaces)
	if err != nil {
		return err
	}
	return p.PrintObj(obj, o.Out)
}

func (o *Options) isTable() bool {
	f := *o.PrintFlags.OutputFormat
	return f == "" || f == "wide"
}

func (o *Options) list(ctx context.Context) (*musterv1.TrainingJobList, error) {
	sel, _ := labels.Parse(o.Selector)
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	list := &musterv1.TrainingJobList{}
	if err := o.Client.List(ctx, list, opts...); err != nil {
		return nil, cmdutil.JobError(err, o.Namespace, "")
	}
	if len(o.Names) == 0 {
		return list, nil
	}
	// Several names: every one must exist, as with kubectl get.
	byName := map[string]musterv1.TrainingJob{}
	for _, j := range list.Items {
		byName[j.Name] = j
	}
	out := &musterv1.TrainingJobList{}
	for _, n := range o.Names {
		j, ok := byName[n]
		if !ok {
			return nil, cmdutil.JobError(apierrors.NewNotFound(musterv1.GroupVersion.WithResource("trainingjobs").GroupResource(), n), o.Namespace, n)
		}
		out.Items = append(out.Items, j)
	}
	return out, nil
}
