// Package logs implements `muster logs`: the logs of every pod of a job as
// one stream, each line prefixed with its task.
package logs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/joblogs"
)

const example = `  # Every task's logs, merged in time order, each line prefixed with its task
  muster logs pet

  # Keep following, through restarts and scale-ups
  muster logs pet -f

  # The last 20 lines of worker 3 from the last 10 minutes
  muster logs pet --role worker --index 3 --since 10m --tail 20

  # Worker 1's second pod, while it exists (the lines prefixed worker-1#2)
  muster logs pet --role worker --index 1 --attempt 2

  # The instance before a restart in place of each pod's container
  muster logs pet --previous`

// Options are logs' flags and what Complete derives from them.
type Options struct {
	Follow     bool
	Role       string
	Index      int
	Since      time.Duration
	Tail       int64
	Container  string
	MaxStreams int
	Prefix     bool
	Timestamps bool
	Attempt    int
	Previous   bool

	indexSet   bool
	attemptSet bool
	Name       string
	Namespace  string
	Client     client.WithWatch
	Kube       kubernetes.Interface

	genericiooptions.IOStreams
}

// NewCmd returns the logs command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "logs JOB [-f] [--role ROLE [--index N]] [--attempt N] [-p] [--since D] [--tail N]",
		Short: "Print the logs of every pod of a job as one stream, each line prefixed with its task",
		Long: "Print the logs of every pod of a job, each line prefixed with its task as ROLE-INDEX (#N after\n" +
			"the task's first pod: its Nth instance). Without -f the lines are merged in time order.\n" +
			"With -f it follows, and reads the pods that start later, found through a watch: replacements\n" +
			"after a restart and new tasks after a scale-up. --since and --tail apply to the pods there at\n" +
			"the start; later pods are read from their first line. A task restarted by Muster gets a new pod\n" +
			"of the same name, so its earlier pods, and their logs, last only until the replacement is made:\n" +
			"--attempt N reads the tasks' Nth pods while they exist; -p (--previous), as kubectl's, reads the\n" +
			"instance of each pod's container before a restart in place.",
		Example:           example,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.indexSet = cmd.Flags().Changed("index")
			o.attemptSet = cmd.Flags().Changed("attempt")
			return cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, o.Validate, o.Run)(cmd, args)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "keep following, including pods created later")
	fl.StringVar(&o.Role, "role", "", "only the tasks of this role")
	fl.IntVar(&o.Index, "index", 0, "only the task of this index (with --role)")
	fl.DurationVar(&o.Since, "since", 0, "only lines newer than this, e.g. 10m")
	fl.Int64Var(&o.Tail, "tail", -1, "only the last N lines of each pod (-1: all)")
	fl.StringVarP(&o.Container, "container", "c", "", "the container to read (default: the pod's first)")
	fl.IntVar(&o.MaxStreams, "max-log-requests", joblogs.DefaultMaxStreams, "how many pods are read at once; with -f, pods beyond it wait for a stream to end")
	fl.BoolVar(&o.Prefix, "prefix", true, "prefix each line with its task")
	fl.BoolVar(&o.Timestamps, "timestamps", false, "prefix each line with the time it was written")
	fl.IntVar(&o.Attempt, "attempt", 0, "only the tasks' Nth pods (#N in the prefix), while they exist")
	fl.BoolVarP(&o.Previous, "previous", "p", false, "the previous instance of each pod's container, before a restart in place")
	return cmd
}

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.Name = args[0]
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

// Validate checks the flags alone; Run checks --role against the job.
func (o *Options) Validate() error {
	switch {
	case o.indexSet && o.Role == "":
		return fmt.Errorf("--index needs --role: an index numbers the tasks of one role")
	case o.indexSet && o.Index < 0:
		return fmt.Errorf("--index %d: task indexes start at 0", o.Index)
	case o.MaxStreams < 1:
		return fmt.Errorf("--max-log-requests %d: at least 1", o.MaxStreams)
	case o.Since < 0:
		return fmt.Errorf("--since %s: a duration back from now, e.g. 10m", o.Since)
	case o.attemptSet && o.Attempt < 1:
		return fmt.Errorf("--attempt %d: a task's first pod is its attempt 1", o.Attempt)
	case o.Previous && o.Follow:
		return fmt.Errorf("--previous reads ended instances, which write no more: drop -f")
	}
	return nil
}

// Run streams the logs.
func (o *Options) Run(ctx context.Context) error {
	job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	if o.Role != "" && !hasRole(job, o.Role) {
		return fmt.Errorf("job %s has no role %q: its roles are %v", o.Name, o.Role, roleNames(job))
	}
	opts := joblogs.Options{Follow: o.Follow, Container: o.Container, Role: o.Role, Since: o.Since, MaxStreams: o.MaxStreams,
		Attempt: o.Attempt, Previous: o.Previous}
	if o.indexSet {
		opts.Index = &o.Index
	}
	if o.Tail >= 0 {
		opts.TailLines = &o.Tail
	}
	latest := &jobState{job: job}
	opts.Removed = latest.scaledDown
	if o.Follow {
		// Following ends with the job: its pods are read to their end and
		// no new one is awaited.
		done := make(chan struct{})
		opts.Done = done
		watchCtx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			err := cmdutil.WatchJob(watchCtx, o.Client, o.Namespace, o.Name, func(j *musterv1.TrainingJob) bool {
				latest.set(j)
				if j == nil || j.Status.Finished() {
					close(done)
					return true
				}
				return false
			})
			if err != nil {
				fmt.Fprintf(o.ErrOut, "cannot watch trainingjob %s/%s (%v): following until interrupted\n", o.Namespace, o.Name, err)
			}
		}()
	}
	aside := &asideFiles{job: o.Name}
	defer aside.close()
	lines := 0
	read := map[string]bool{} // the tasks whose pods were read
	err = joblogs.Follow(ctx, o.Kube, o.Namespace, o.Name, opts, func(l joblogs.Line) {
		read[taskName(l.Role, l.Index)] = true
		if l.Removed {
			o.setAside(aside, l)
			return
		}
		lines++
		o.print(l)
	})
	if err != nil {
		return cmdutil.JobError(err, o.Namespace, o.Name)
	}
	switch {
	case lines == 0 && !o.Follow:
		fmt.Fprintf(o.ErrOut, "No logs: %s\n", o.noLogs(job))
	case o.Attempt > 0 && !o.Follow:
		// Some tasks' pods of the attempt were there; say which were not.
		if gone := tasksPast(job, o.Role, o.indexPtr(), o.Attempt, read); len(gone) > 0 {
			fmt.Fprintf(o.ErrOut, "Not read: %s\n", o.attemptGone(gone))
		}
	}
	return nil
}

// attemptGone says that the tasks listed have replaced their pods of the
// attempt asked for.
func (o *Options) attemptGone(later []string) string {
	return fmt.Sprintf("the pods of attempt %d of %s are gone: a task's pod is deleted, with its logs, before the next is made; "+
		"`muster describe %s` shows how each task's last pod ended", o.Attempt, listSome(later), o.Name)
}

// noLogs says why nothing was read, and what to do.
func (o *Options) noLogs(job *musterv1.TrainingJob) string {
	if o.Previous {
		return fmt.Sprintf("no container of trainingjob %s/%s's pods%s has restarted in place; "+
			"a task Muster restarts gets a new pod, read without --previous (its lines are prefixed #N)", o.Namespace, o.Name, o.narrowed())
	}
	if o.Attempt > 0 {
		if later := tasksPast(job, o.Role, o.indexPtr(), o.Attempt, nil); len(later) > 0 {
			return fmt.Sprintf("trainingjob %s/%s%s: %s", o.Namespace, o.Name, o.narrowed(), o.attemptGone(later))
		}
		return fmt.Sprintf("no task of trainingjob %s/%s%s has a started pod of attempt %d (phase %s); `muster logs -f --attempt %d` waits for them",
			o.Namespace, o.Name, o.narrowed(), o.Attempt, orDash(string(job.Status.Phase)), o.Attempt)
	}
	return fmt.Sprintf("no pod of trainingjob %s/%s has started%s (phase %s); `muster logs -f` waits for them",
		o.Namespace, o.Name, o.narrowed(), orDash(string(job.Status.Phase)))
}

// listSome joins the first few of names, saying how many more there are.
func listSome(names []string) string {
	const some = 4
	if len(names) <= some {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:some], ", "), len(names)-some)
}

func (o *Options) indexPtr() *int {
	if o.indexSet {
		return &o.Index
	}
	return nil
}

// tasksPast lists the tasks (of role, and index, when given; not those
// read) that have made more than attempt pods, as ROLE-INDEX (now #N),
// from the job's status: their pod of that attempt has been replaced.
func tasksPast(job *musterv1.TrainingJob, role string, index *int, attempt int, read map[string]bool) []string {
	var out []string
	for _, rs := range job.Status.Roles {
		if role != "" && rs.Name != role {
			continue
		}
		for _, t := range rs.Tasks {
			for i := t.Index; i < t.Index+max(t.Count, 1); i++ {
				if (index == nil || int(i) == *index) && int(t.Attempts) > attempt && !read[taskName(rs.Name, int(i))] {
					out = append(out, fmt.Sprintf("%s (now #%d)", taskName(rs.Name, int(i)), t.Attempts))
				}
			}
		}
	}
	return out
}

func (o *Options) print(l joblogs.Line) {
	if o.Timestamps && !l.Time.IsZero() {
		fmt.Fprint(o.Out, l.Time.UTC().Format(time.RFC3339Nano), " ")
	}
	if o.Prefix {
		fmt.Fprintf(o.Out, "[%s] ", l.Prefix())
	}
	fmt.Fprintln(o.Out, l.Text)
}

// setAside keeps a removed pod's shutdown output in a file of its own and
// says so once in the stream, so that a scale-down's SIGTERM tracebacks do
// not drown the training's lines and are still there to read.
func (o *Options) setAside(a *asideFiles, l joblogs.Line) {
	path, first, err := a.write(l)
	if !first {
		return
	}
	note := l
	note.Text = "removed by a scale-down; its shutdown output is in " + path
	if err != nil {
		note.Text = "removed by a scale-down; its shutdown output could not be kept: " + err.Error()
	}
	o.print(note)
}

func (o *Options) narrowed() string {
	switch {
	case o.indexSet:
		return fmt.Sprintf(" in role %s at index %d", o.Role, o.Index)
	case o.Role != "":
		return " in role " + o.Role
	}
	return ""
}

func hasRole(job *musterv1.TrainingJob, role string) bool {
	for _, r := range job.Spec.Roles {
		if r.Name == role {
			return true
		}
	}
	return false
}

func roleNames(job *musterv1.TrainingJob) []string {
	var out []string
	for _, r := range job.Spec.Roles {
		out = append(out, r.Name)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func taskName(role string, index int) string { return fmt.Sprintf("%s-%d", role, index) }
