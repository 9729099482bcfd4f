// Package wait implements `muster wait`: block until jobs reach a
// condition or a phase, or are gone, following them through a watch.
package wait

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/cli/progress"
)

const example = `  # Until the job succeeds, for at most an hour
  muster wait pet --for=condition=Succeeded --timeout=1h

  # Until every task runs
  muster wait pet --for=phase=Running

  # Until the job and its pods are gone
  muster wait pet --for=delete

  # Until the job's program reports half of its training done
  muster wait pet --for=progress=50 --timeout=2h`

// Options are wait's flags and what Complete derives from them.
type Options struct {
	For     string
	Timeout time.Duration

	// Condition is --for, parsed.
	Condition Condition

	Names     []string
	Namespace string
	Client    client.WithWatch
	factory   cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the wait command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "wait JOB... --for=condition=TYPE[=true|false]|phase=PHASE|progress=PERCENT|delete [--timeout=30s]",
		Short: "Wait until jobs reach a condition or a phase, or are deleted",
		Long: "Wait follows each job through a watch until it reaches what --for names. It gives up early,\n" +
			"with an error, when the job has finished and can no longer get there (waiting for Succeeded on a\n" +
			"job that failed). On a terminal a spinner line says what it waits for; otherwise a line is\n" +
			"written to stderr each time the job's phase changes.",
		Example:           example,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 0),
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, o.Validate, o.Run),
	}
	cmd.Flags().StringVar(&o.For, "for", "", "condition=TYPE[=true|false] (Created, Running, Restarting, Suspended, GangScheduled, Stalled, Succeeded, Failed), phase=PHASE, progress=PERCENT (status.progress.percent at least PERCENT), or delete")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 30*time.Second, "how long to wait for all the jobs: 0 checks once, a negative value waits without limit")
	_ = cmd.MarkFlagRequired("for")
	_ = cmd.RegisterFlagCompletionFunc("for", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"condition=Succeeded", "condition=Failed", "condition=Running", "condition=GangScheduled",
			"phase=Running", "phase=Succeeded", "phase=Failed", "progress=50", "delete"}, cobra.ShellCompDirectiveNoFileComp
	})
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

// Validate parses --for.
func (o *Options) Validate() error {
	c, err := ParseFor(o.For)
	o.Condition = c
	return err
}

// Run waits for each job in turn, all within one timeout.
func (o *Options) Run(ctx context.Context) error {
	switch {
	case o.Timeout == 0:
		// Check once: an already expired context stops at the first check.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		cancel()
	case o.Timeout > 0:
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	p := progress.New(o.IOStreams, o.factory.Clock())
	defer p.Done()
	for _, name := range o.Names {
		if err := o.WaitOne(ctx, p, name); err != nil {
			return err
		}
		p.Done()
		fmt.Fprintf(o.Out, "%s %s\n", cmdutil.Ref(name), o.Condition.met())
	}
	return nil
}

// WaitOne waits for one job, showing progress on p.
func (o *Options) WaitOne(ctx context.Context, p *progress.Progress, name string) error {
	job := &musterv1.TrainingJob{}
	for {
		// A fresh read on every (re)start: a watch may end at any time, and
		// what happened meanwhile must not be missed.
		err := o.Client.Get(context.WithoutCancel(ctx), client.ObjectKey{Namespace: o.Namespace, Name: name}, job)
		if err != nil && (!apierrors.IsNotFound(err) || !o.Condition.Delete) {
			return cmdutil.JobError(err, o.Namespace, name)
		}
		if done, err := o.check(name, job, apierrors.IsNotFound(err)); done || err != nil {
			return err
		}
		p.Set("%s", o.waitingFor(job))
		if ctx.Err() != nil {
			return o.timeout(job)
		}
		w, err := o.Client.Watch(ctx, &musterv1.TrainingJobList{}, client.InNamespace(o.Namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: job.ResourceVersion, AllowWatchBookmarks: true}})
		if err != nil {
			if ctx.Err() != nil {
				return o.timeout(job)
			}
			return cmdutil.JobError(err, o.Namespace, name)
		}
		done, err := o.follow(ctx, p, w, name, job)
		if done || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return o.timeout(job)
		}
	}
}

// follow reads watch events until the wait is over (done) or the watch
// ends (not done, no error: read again and watch again).
func (o *Options) follow(ctx context.Context, p *progress.Progress, w watch.Interface, name string, job *musterv1.TrainingJob) (bool, error) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			j, isJob := ev.Object.(*musterv1.TrainingJob)
			if !isJob || j.Name != name {
				continue
			}
			*job = *j
			if done, err := o.check(name, job, ev.Type == watch.Deleted); done || err != nil {
				return done, err
			}
			p.Set("%s", o.waitingFor(job))
		}
	}
}

// check is whether the wait is over: met, or never to be met (an error).
func (o *Options) check(name string, job *musterv1.TrainingJob, gone bool) (bool, error) {
	if o.Condition.Delete {
		return gone, nil
	}
	if gone {
		return false, fmt.Errorf("trainingjob %s/%s was deleted while waiting for %s", o.Namespace, name, o.Condition)
	}
	if o.Condition.Met(job) {
		return true, nil
	}
	if job.Status.Finished() {
		why := ""
		if c := job.Status.Completion; c != nil {
			why = fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
		}
		return false, fmt.Errorf("trainingjob %s/%s has finished as %s%s: it will never be %s; `muster describe %s` says more",
			o.Namespace, name, job.Status.Phase, why, o.Condition, name)
	}
	return false, nil
}

func (o *Options) waitingFor(job *musterv1.TrainingJob) string {
	return fmt.Sprintf("waiting for trainingjob %s/%s to be %s: now %s", o.Namespace, job.Name, o.Condition, state(job))
}

func (o *Options) timeout(job *musterv1.TrainingJob) error {
	return fmt.Errorf("timed out after %s waiting for trainingjob %s/%s to be %s: it is %s; wait longer with --timeout",
		o.Timeout, o.Namespace, job.Name, o.Condition, state(job))
}

// state is the job's phase, ready tasks and the condition behind it.
func state(job *musterv1.TrainingJob) string {
	s := string(job.Status.Phase)
	if s == "" {
		return "not yet seen by the operator"
	}
	if job.Status.Ready != "" {
		s += ", " + job.Status.Ready + " ready"
	}
	if c := job.Status.Condition(musterv1.ConditionRunning); c != nil && c.Status != metav1.ConditionTrue && c.Message != "" {
		s += " (" + c.Message + ")"
	}
	if p := job.Status.Progress; p != nil && p.Percent != nil {
		s += fmt.Sprintf(", %d%% done", *p.Percent)
	}
	return s
}

// Condition is what --for waits for.
type Condition struct {
	Type   string
	Status metav1.ConditionStatus
	Phase  musterv1.JobPhase
	Delete bool
	// Progress is, for progress=PERCENT, the percent of training done
	// that meets it.
	Progress *int32
}

// ParseFor reads --for.
func ParseFor(s string) (Condition, error) {
	kind, rest, _ := strings.Cut(s, "=")
	switch strings.ToLower(kind) {
	case "delete":
		return Condition{Delete: true}, nil
	case "condition":
		t, v, hasValue := strings.Cut(rest, "=")
		c := Condition{Type: t, Status: metav1.ConditionTrue}
		if hasValue {
			switch strings.ToLower(v) {
			case "true":
			case "false":
				c.Status = metav1.ConditionFalse
			default:
				return c, fmt.Errorf("--for=%s: a condition is true or false, not %q", s, v)
			}
		}
		if t == "" {
			return c, errors.New("--for=condition= needs a condition type, e.g. --for=condition=Succeeded")
		}
		return c, nil
	case "progress":
		n, err := strconv.Atoi(strings.TrimSuffix(rest, "%"))
		if err != nil || n < 0 || n > 100 {
			return Condition{}, fmt.Errorf("--for=%s: progress is a percent of training done, 0 to 100, e.g. --for=progress=50", s)
		}
		return Condition{Progress: new(int32(n))}, nil
	case "phase":
		for _, p := range []musterv1.JobPhase{musterv1.PhasePending, musterv1.PhaseRunning, musterv1.PhaseRestarting,
			musterv1.PhaseSuspended, musterv1.PhaseSucceeded, musterv1.PhaseFailed} {
			if strings.EqualFold(string(p), rest) {
				return Condition{Phase: p}, nil
			}
		}
		return Condition{}, fmt.Errorf("--for=%s: no such phase; phases are Pending, Running, Restarting, Suspended, Succeeded and Failed", s)
	}
	return Condition{}, fmt.Errorf("--for=%s: give condition=TYPE[=true|false], phase=PHASE, progress=PERCENT or delete", s)
}

// Met is whether the job is where the condition says.
func (c Condition) Met(job *musterv1.TrainingJob) bool {
	if c.Progress != nil {
		p := job.Status.Progress
		return p != nil && p.Percent != nil && *p.Percent >= *c.Progress
	}
	if c.Phase != "" {
		return job.Status.Phase == c.Phase
	}
	for _, cond := range job.Status.Conditions {
		if strings.EqualFold(cond.Type, c.Type) {
			return cond.Status == c.Status
		}
	}
	return false
}

func (c Condition) String() string {
	switch {
	case c.Delete:
		return "deleted"
	case c.Progress != nil:
		return fmt.Sprintf("%d%% done", *c.Progress)
	case c.Phase != "":
		return string(c.Phase)
	case c.Status == metav1.ConditionFalse:
		return c.Type + "=False"
	}
	return c.Type
}

func (c Condition) met() string {
	if c.Delete {
		return "deleted"
	}
	return "condition met"
}
