// Package top implements `muster top`: the training progress of jobs, as
// far as their status tells it (world size, throughput, the autoscaler's
// state, restarts), once or kept up to date through a watch.
package top

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	musterprinters "github.com/muster-dev/muster/internal/cli/printers"
)

const example = `  # The training progress of the namespace's jobs
  muster top

  # Of one job, kept up to date as its status changes
  muster top pet -w

  # Of every namespace's jobs
  muster top -A`

// Options are top's flags and what Complete derives from them.
type Options struct {
	AllNamespaces bool
	Watch         bool
	Selector      string
	NoHeaders     bool

	Names     []string
	Namespace string
	Client    client.WithWatch
	factory   cmdutil.Factory
	selector  labels.Selector

	genericiooptions.IOStreams
}

// NewCmd returns the top command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "top [JOB...] [-A] [-w]",
		Short: "Show the training progress of jobs: world size, throughput, the autoscaler's state, restarts",
		Long: "Top prints, for each job, its phase, its world (the scalable roles' size and bounds, else every\n" +
			"role's tasks), its ready tasks, the newest throughput the operator read and how long ago\n" +
			"(status.autoscaler.lastSample: a job reports throughput only with spec.scaling.autoscaling),\n" +
			"the autoscaler's best size so far with its throughput, its phase and reason, and the job's\n" +
			"restarts. With -w it keeps the table up to date through a watch, printing it anew on every\n" +
			"change (on a terminal, in place of the last one).",
		Example:           example,
		ValidArgsFunction: cmdutil.JobNames(f, 0),
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, o.Validate, o.Run),
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "the jobs of every namespace")
	fl.BoolVarP(&o.Watch, "watch", "w", false, "keep the table up to date as the jobs change")
	fl.StringVarP(&o.Selector, "selector", "l", "", "only jobs whose labels match, e.g. -l team=vision")
	fl.BoolVar(&o.NoHeaders, "no-headers", false, "leave out the table's header line")
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
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return fmt.Errorf("-l %q: %w", o.Selector, err)
	}
	o.selector = sel
	return nil
}

// Run prints the table once, or keeps printing it with -w.
func (o *Options) Run(ctx context.Context) error {
	jobs, rv, err := o.list(ctx)
	if err != nil {
		return err
	}
	if !o.Watch {
		if len(jobs) == 0 {
			o.noJobs()
			return nil
		}
		return o.print(jobs)
	}
	return o.watch(ctx, jobs, rv)
}

// list reads the jobs top shows, sorted by namespace and name, and the
// resourceVersion a watch goes on from. Every named job must exist.
func (o *Options) list(ctx context.Context) ([]musterv1.TrainingJob, string, error) {
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: o.selector}}
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	list := &musterv1.TrainingJobList{}
	if err := o.Client.List(ctx, list, opts...); err != nil {
		return nil, "", cmdutil.JobError(err, o.Namespace, "")
	}
	var jobs []musterv1.TrainingJob
	for _, j := range list.Items {
		if o.wanted(&j) {
			jobs = append(jobs, j)
		}
	}
	for _, n := range o.Names {
		if !slices.ContainsFunc(jobs, func(j musterv1.TrainingJob) bool { return j.Name == n }) {
			return nil, "", cmdutil.JobError(apierrors.NewNotFound(musterv1.GroupVersion.WithResource("trainingjobs").GroupResource(), n), o.Namespace, n)
		}
	}
	sortJobs(jobs)
	return jobs, list.ResourceVersion, nil
}

func (o *Options) wanted(j *musterv1.TrainingJob) bool {
	return (len(o.Names) == 0 || slices.Contains(o.Names, j.Name)) && o.selector.Matches(labels.Set(j.Labels))
}

// watch prints the table, then anew on every change of the jobs, until
// ctx ends. When the API server closes the watch it lists the jobs again
// and goes on from there, so no change is missed.
func (o *Options) watch(ctx context.Context, jobs []musterv1.TrainingJob, rv string) error {
	seen := map[client.ObjectKey]musterv1.TrainingJob{}
	for _, j := range jobs {
		seen[client.ObjectKeyFromObject(&j)] = j
	}
	if err := o.redraw(seen); err != nil {
		return err
	}
	for ctx.Err() == nil {
		opts := []client.ListOption{client.MatchingLabelsSelector{Selector: o.selector},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}}
		if !o.AllNamespaces {
			opts = append(opts, client.InNamespace(o.Namespace))
		}
		w, err := o.Client.Watch(ctx, &musterv1.TrainingJobList{}, opts...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return cmdutil.JobError(err, o.Namespace, "")
		}
		if err := o.follow(ctx, w, seen); err != nil || ctx.Err() != nil {
			return err
		}
		// The watch ended: read the jobs afresh and watch from there.
		if jobs, rv, err = o.relist(ctx); err != nil {
			return err
		}
		clear(seen)
		for _, j := range jobs {
			seen[client.ObjectKeyFromObject(&j)] = j
		}
		if err := o.redraw(seen); err != nil {
			return err
		}
	}
	return nil
}

// relist is list without the check that named jobs exist: a job deleted
// while top watched it is just no longer shown.
func (o *Options) relist(ctx context.Context) ([]musterv1.TrainingJob, string, error) {
	names := o.Names
	o.Names = nil
	defer func() { o.Names = names }()
	jobs, rv, err := o.list(ctx)
	var kept []musterv1.TrainingJob
	for _, j := range jobs {
		if len(names) == 0 || slices.Contains(names, j.Name) {
			kept = append(kept, j)
		}
	}
	return kept, rv, err
}

// follow applies the watch's events to seen and redraws after each batch
// of events that arrived together, until the watch or ctx ends.
func (o *Options) follow(ctx context.Context, w watch.Interface, seen map[client.ObjectKey]musterv1.TrainingJob) error {
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case ev, ok = <-w.ResultChan():
		}
		changed := false
		for {
			if !ok || ev.Type == watch.Error {
				if changed {
					return o.redraw(seen)
				}
				return nil
			}
			changed = apply(ev, seen, o.wanted) || changed
			select {
			case ev, ok = <-w.ResultChan():
				continue
			default:
			}
			break
		}
		if changed {
			if err := o.redraw(seen); err != nil {
				return err
			}
		}
	}
}

// apply records one event in seen, and says whether it changed what top
// shows.
func apply(ev watch.Event, seen map[client.ObjectKey]musterv1.TrainingJob, wanted func(*musterv1.TrainingJob) bool) bool {
	j, isJob := ev.Object.(*musterv1.TrainingJob)
	if !isJob {
		return false
	}
	key := client.ObjectKeyFromObject(j)
	switch ev.Type {
	case watch.Added, watch.Modified:
		if !wanted(j) {
			return false
		}
		seen[key] = *j
		return true
	case watch.Deleted:
		_, had := seen[key]
		delete(seen, key)
		return had
	}
	return false
}

// redraw prints the table of the jobs in seen: on a terminal in place of
// the last one, otherwise after a blank line.
func (o *Options) redraw(seen map[client.ObjectKey]musterv1.TrainingJob) error {
	jobs := make([]musterv1.TrainingJob, 0, len(seen))
	for _, j := range seen {
		jobs = append(jobs, j)
	}
	sortJobs(jobs)
	if printers.IsTerminal(o.Out) {
		fmt.Fprint(o.Out, "\x1b[H\x1b[2J")
	}
	if len(jobs) == 0 {
		o.noJobs()
		return nil
	}
	return o.print(jobs)
}

func (o *Options) noJobs() {
	out := o.ErrOut
	if o.Watch {
		// Watching, the message is the table of the moment.
		out = o.Out
	}
	if o.AllNamespaces {
		fmt.Fprintln(out, "No training jobs found.")
	} else {
		fmt.Fprintf(out, "No training jobs found in namespace %s.\n", o.Namespace)
	}
}

func (o *Options) print(jobs []musterv1.TrainingJob) error {
	t, err := musterprinters.TopTable(&musterv1.TrainingJobList{Items: jobs}, o.factory.Clock().Now())
	if err != nil {
		return err
	}
	p := printers.NewTablePrinter(printers.PrintOptions{WithNamespace: o.AllNamespaces, NoHeaders: o.NoHeaders})
	if err := p.PrintObj(t, o.Out); err != nil {
		return err
	}
	if o.Watch && !printers.IsTerminal(o.Out) {
		_, err = io.WriteString(o.Out, "\n")
	}
	return err
}

func sortJobs(jobs []musterv1.TrainingJob) {
	slices.SortFunc(jobs, func(a, b musterv1.TrainingJob) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
