// Package events implements `muster events`: what happened to a job and to
// the objects Muster made for it, oldest first.
package events

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cliprinters "k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/cli/printers"
)

const example = `  # What happened to a job, its pods, its Service and its gang
  muster events pet

  # ... and keep printing what happens next
  muster events pet -w

  # Events about every job of the namespace
  muster events`

// Options are events' flags and what Complete derives from them.
type Options struct {
	PrintFlags    *cmdutil.PrintFlags
	Watch         bool
	AllNamespaces bool

	Name      string
	Namespace string
	Client    client.Client
	Kube      kubernetes.Interface
	factory   cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the events command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{PrintFlags: cmdutil.NewPrintFlags(), IOStreams: streams}
	cmd := &cobra.Command{
		Use:               "events [JOB]",
		Short:             "List the events of a job and of its pods, Service and gang objects",
		Example:           example,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 1),
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, o.Validate, o.Run),
	}
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "after listing, keep printing new events")
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "without JOB: the events of every namespace's jobs")
	return cmd
}

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.factory = f
	if len(args) == 1 {
		o.Name = args[0]
	}
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

// Validate checks the flags together.
func (o *Options) Validate() error {
	if o.AllNamespaces && o.Name != "" {
		return fmt.Errorf("name a job or pass -A, not both: a job name is looked up in one namespace (-n)")
	}
	_, err := o.PrintFlags.ToPrinter(nil, false)
	return err
}

// Run lists the events, then follows them with -w.
func (o *Options) Run(ctx context.Context) error {
	var (
		list   []corev1.Event
		filter func(*corev1.Event) bool
		err    error
	)
	ns := o.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	if o.Name != "" {
		job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, o.Name)
		if err != nil {
			return err
		}
		if list, err = cmdutil.JobEvents(ctx, o.Kube, job, true); err != nil {
			return cmdutil.JobError(err, o.Namespace, o.Name)
		}
		filter = cmdutil.JobEventFilter(job, true)
	} else {
		filter = func(e *corev1.Event) bool { return e.InvolvedObject.Kind == "TrainingJob" }
		all, err := o.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: jobKind.String()})
		if err != nil {
			return cmdutil.JobError(err, o.Namespace, "")
		}
		for i := range all.Items {
			if filter(&all.Items[i]) {
				list = append(list, all.Items[i])
			}
		}
		cmdutil.SortEvents(list)
	}
	p, err := o.printer()
	if err != nil {
		return err
	}
	if len(list) == 0 && !o.Watch {
		fmt.Fprintf(o.ErrOut, "No events found%s.\n", o.where())
		return nil
	}
	if len(list) > 0 {
		if err := p.PrintObj(&corev1.EventList{Items: list}, o.Out); err != nil {
			return err
		}
	}
	if !o.Watch {
		return nil
	}
	return o.follow(ctx, ns, p, filter)
}

var jobKind = fields.Set{"involvedObject.kind": "TrainingJob"}

func (o *Options) where() string {
	switch {
	case o.Name != "":
		return fmt.Sprintf(" for trainingjob %s/%s", o.Namespace, o.Name)
	case o.AllNamespaces:
		return " for any job"
	}
	return " for the jobs of namespace " + o.Namespace
}

func (o *Options) printer() (cliprinters.ResourcePrinter, error) {
	return o.PrintFlags.ToPrinter(func(obj runtime.Object) (*metav1.Table, error) {
		return printers.EventTable(obj, o.factory.Clock().Now())
	}, o.AllNamespaces)
}

// follow prints the events that come after the list, until interrupted.
func (o *Options) follow(ctx context.Context, ns string, p cliprinters.ResourcePrinter, filter func(*corev1.Event) bool) error {
	opts := metav1.ListOptions{}
	if o.Name == "" {
		opts.FieldSelector = jobKind.String()
	}
	w, err := o.Kube.CoreV1().Events(ns).Watch(ctx, opts)
	if err != nil {
		return cmdutil.JobError(err, o.Namespace, o.Name)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			e, isEvent := ev.Object.(*corev1.Event)
			if !isEvent || ev.Type == watch.Deleted || !filter(e) {
				continue
			}
			if err := p.PrintObj(e, o.Out); err != nil {
				return err
			}
		}
	}
}
