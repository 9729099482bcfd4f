package printers

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/liggitt/tabwriter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// recentFailures is how many of a job's most recent task exits describe
// lists.
const recentFailures = 8

// Describe writes everything a job's status says, in the order an engineer
// reads it when a job misbehaves: where it is, why, its budget, its roles
// and tasks, what failed last, its elastic world, autoscaler and gang,
// its TensorBoard, an MPI job's SSH Secret, its attempts and its events
// (oldest first).
func Describe(out io.Writer, job *musterv1.TrainingJob, events []corev1.Event, now time.Time) error {
	d := &describer{out: out, job: job, now: now}
	// Each section aligns its own columns: one tab writer per section.
	for _, section := range []func(){
		d.summary, d.conditions, d.roles, d.tasks, d.failures, d.progress, d.elastic,
		d.autoscaler, d.scheduling, d.tensorBoard, d.mpi, d.attempts, func() { d.events(events) },
	} {
		d.w = printers.GetNewTabWriter(out)
		section()
		if err := d.w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

type describer struct {
	out io.Writer
	w   *tabwriter.Writer
	job *musterv1.TrainingJob
	now time.Time
}

func (d *describer) line(format string, args ...any) { fmt.Fprintf(d.w, format+"\n", args...) }

// at is a time and how long ago it was.
func (d *describer) at(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), Age(*t, d.now))
}

func (d *describer) summary() {
	j, s := d.job, &d.job.Status
	d.line("Name:\t%s", j.Name)
	d.line("Namespace:\t%s", j.Namespace)
	d.line("Created:\t%s", d.at(&j.CreationTimestamp))
	d.line("Phase:\t%s", orDash(string(s.Phase)))
	d.line("Ready:\t%s", orDash(s.Ready))
	switch e := j.Spec.Run.Execution; e {
	case "", musterv1.ExecutionStart:
	case musterv1.ExecutionSuspend:
		d.line("Suspended:\tyes (spec.run.execution): resume with `muster resume %s`", j.Name)
	default:
		d.line("Execution:\t%s", e)
	}
	d.line("Started:\t%s", d.at(s.StartTime))
	if s.CompletionTime != nil {
		d.line("Finished:\t%s", d.at(s.CompletionTime))
	}
	attempt := itoa(s.Attempt)
	if r := j.Spec.FailurePolicy.Retry; r != nil && r.Policy != musterv1.RetryNever {
		attempt += fmt.Sprintf(" (%d retries, retry %s)", s.Retries.Total, orDash(string(r.Policy)))
	}
	d.line("Attempt:\t%s", attempt)
	if s.NextAttemptTime != nil {
		d.line("Next attempt:\tnot before %s", d.at(s.NextAttemptTime))
	}
	limit := ptr.Deref(j.Spec.FailurePolicy.BackoffLimit, musterv1.DefaultBackoffLimit)
	d.line("Restarts:\t%d, %d counted against backoffLimit %d: %d left", s.Restarts.Total, s.Restarts.Accountable, limit, max(limit-s.Restarts.Accountable, 0))
	if per := j.Spec.FailurePolicy.BackoffLimitPerTask; per != nil {
		d.line("\tbackoffLimitPerTask %d: each task may restart %d times", *per, *per)
	}
	if c := s.Completion; c != nil {
		d.line("Completion:\t%s: %s", c.Reason, c.Message)
		if trig := triggeredBy(c); trig != "" {
			d.line("\t%s", trig)
		}
	}
}

// triggeredBy names the task and exit that ended the job, if one did.
func triggeredBy(c *musterv1.CompletionStatus) string {
	var parts []string
	if c.Role != "" {
		task := "role " + c.Role
		if c.Index != nil {
			task = fmt.Sprintf("task %s-%d", c.Role, *c.Index)
		}
		parts = append(parts, task)
	}
	if c.ExitCode != nil {
		parts = append(parts, fmt.Sprintf("exit code %d", *c.ExitCode))
	}
	if c.Code != nil {
		parts = append(parts, fmt.Sprintf("completion code %d %s", *c.Code, c.Phrase))
	}
	parts = append(parts, c.Attributes...)
	return strings.Join(parts, ", ")
}

func (d *describer) conditions() {
	d.line("Conditions:")
	if len(d.job.Status.Conditions) == 0 {
		d.line("  <none>")
		return
	}
	d.line("  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range d.job.Status.Conditions {
		d.line("  %s\t%s\t%s\t%s\t%s", c.Type, c.Status, c.Reason, Age(c.LastTransitionTime, d.now), c.Message)
	}
}

func (d *describer) roles() {
	d.line("Roles:")
	if len(d.job.Status.Roles) == 0 {
		d.line("  <none>")
		return
	}
	d.line("  ROLE\tREPLICAS\tPENDING\tRUNNING\tSUCCEEDED\tFAILED")
	for _, r := range d.job.Status.Roles {
		d.line("  %s\t%d\t%d\t%d\t%d\t%d", r.Name, r.Replicas, r.Pending, r.Running, r.Succeeded, r.Failed)
	}
}

func (d *describer) tasks() {
	d.line("Tasks:")
	d.line("  ROLE\tINDEX\tSTATE\tPOD\tATTEMPTS\tRESTARTS\tLAST EXIT")
	for _, rs := range d.job.Status.Roles {
		for _, t := range rs.Tasks {
			// Tasks alike share one entry: show the range of their indexes.
			index := itoa(t.Index)
			if t.Count > 1 {
				index = fmt.Sprintf("%d-%d", t.Index, t.Index+t.Count-1)
			}
			state := string(t.State)
			if t.DeletionPending {
				state += " (scaled away)"
			}
			if t.Waiting != "" {
				state += " (" + t.Waiting + ")"
			}
			// A single task's pod is named by its job, role and index
			// (status no longer writes it).
			pod := t.Pod
			if pod == "" && t.Count <= 1 {
				pod = objects.PodName(d.job.Name, rs.Name, t.Index)
			}
			d.line("  %s\t%s\t%s\t%s\t%d\t%d\t%s", rs.Name, index, state, orDash(pod), t.Attempts, t.Restarts, LastExit(t.LastExit))
		}
	}
}

type failure struct {
	task string
	exit *musterv1.ExitStatus
}

// failures lists the most recent task exits status keeps, newest first.
func (d *describer) failures() {
	var fs []failure
	for _, rs := range d.job.Status.Roles {
		for _, t := range rs.Tasks {
			if t.LastExit != nil && (t.LastExit.Code != 0 || len(t.LastExit.Attributes) > 0 || t.LastExit.Reason != "") {
				fs = append(fs, failure{task: fmt.Sprintf("%s-%d", rs.Name, t.Index), exit: t.LastExit})
			}
		}
	}
	if len(fs) == 0 {
		return
	}
	slices.SortStableFunc(fs, func(a, b failure) int {
		return finishedAt(b.exit).Compare(finishedAt(a.exit))
	})
	d.line("Recent failures:")
	d.line("  TASK\tAGE\tEXIT\tMESSAGE")
	for _, f := range fs[:min(len(fs), recentFailures)] {
		age := "-"
		if f.exit.FinishedAt != nil {
			age = Age(*f.exit.FinishedAt, d.now)
		}
		d.line("  %s\t%s\t%s\t%s", f.task, age, LastExit(f.exit), orDash(messageEnd(f.exit.Message)))
	}
}

func finishedAt(e *musterv1.ExitStatus) time.Time {
	if e.FinishedAt == nil {
		return time.Time{}
	}
	return e.FinishedAt.Time
}

func (d *describer) elastic() {
	j := d.job
	scalable := topology.ScalableRoles(j)
	if len(scalable) == 0 && j.Status.Elastic == nil {
		return
	}
	var lo, hi int32
	for _, r := range j.Spec.Scaling.Roles {
		lo += ptr.Deref(r.MinReplicas, 1)
		hi += r.MaxReplicas
	}
	title := "Scaling:"
	if topology.ElasticPolicy(j) != nil {
		title = "Elastic world:"
	}
	d.line("%s", title)
	d.line("  Roles:\t%s", strings.Join(scalable, ", "))
	d.line("  Size:\t%d tasks of %d asked (spec.scaling.replicas), %d to %d allowed", j.Status.Replicas, ptr.Deref(j.Spec.Scaling.Replicas, 0), lo, hi)
	e := j.Status.Elastic
	if e == nil {
		return
	}
	if e.Endpoint != "" {
		d.line("  Rendezvous:\t%s", e.Endpoint)
	}
	if e.StorePod != "" {
		d.line("  Store pod:\t%s (replaced: %d)", e.StorePod, e.StoreRestarts)
	}
	if e.BelowMinSince != nil {
		timeout := j.Spec.Scaling.BelowMinTimeoutSeconds
		if timeout == 0 {
			timeout = 600
		}
		d.line("  Below minimum:\tsince %s: the job fails once it has been %ds", d.at(e.BelowMinSince), timeout)
	}
}

// progress is what the job's program last reported of its training
// (spec.progress), with its metrics.
func (d *describer) progress() {
	j := d.job
	if !j.Spec.Progress.Enabled() && j.Status.Progress == nil {
		return
	}
	d.line("Progress:")
	p := j.Status.Progress
	if p == nil {
		d.line("  <no report yet: read from :%d/progress every %ds>", j.Spec.Progress.ServePort(), int(j.Spec.Progress.ReadInterval().Seconds()))
		return
	}
	d.line("  Done:\t%s", Progress(p))
	if p.Step != nil {
		d.line("  Step:\t%d of %s", *p.Step, ofTotal(p.TotalSteps))
	}
	if p.Epoch != nil {
		d.line("  Epoch:\t%d of %s", *p.Epoch, ofTotal(p.TotalEpochs))
	}
	if p.SamplesPerSecond != "" {
		d.line("  Samples/s:\t%s", p.SamplesPerSecond)
	}
	if eta := ETA(p, d.now); eta != "-" {
		d.line("  ETA:\t%s (%s)", eta, p.EstimatedCompletionTime.UTC().Format(time.RFC3339))
	}
	d.line("  Last moved:\t%s, reported by %s", d.at(p.LastProgressTime), orDash(p.Reporter))
	if len(p.Metrics) > 0 {
		d.line("  METRIC\tVALUE")
		for _, m := range p.Metrics {
			d.line("  %s\t%s", m.Name, m.Value)
		}
	}
}

func ofTotal(total *int64) string {
	if total == nil {
		return "?"
	}
	return strconv.FormatInt(*total, 10)
}

func (d *describer) autoscaler() {
	a := d.job.Status.Autoscaler
	if a == nil {
		return
	}
	d.line("Autoscaler:")
	d.line("  State:\t%s (%s)", orDash(a.Phase), orDash(a.Reason))
	if a.Message != "" {
		d.line("  Message:\t%s", a.Message)
	}
	d.line("  Replicas:\t%d asked, best so far %d", a.Replicas, a.LastGood)
	d.line("  Resized:\t%s", d.at(a.ResizedAt))
	d.line("  Sampled:\t%s", d.at(a.SampledAt))
	if a.LastSample != "" {
		d.line("  Latest:\t%s samples/s, read %s", a.LastSample, d.at(a.LastSampleAt))
	}
	if len(a.Sizes) > 0 {
		d.line("  SIZE\tTHROUGHPUT\tSAMPLES")
		for _, s := range a.Sizes {
			d.line("  %d\t%s\t%s", s.Replicas, orDash(s.Throughput), strings.Join(s.Samples, " "))
		}
	}
}

func (d *describer) scheduling() {
	j := d.job
	st, spec := j.Status.Scheduling, j.Spec.Scheduling
	cond := j.Status.Condition(musterv1.ConditionGangScheduled)
	if st == nil && spec.Backend == "" && cond == nil {
		return
	}
	d.line("Scheduling:")
	if st != nil {
		d.line("  Backend:\t%s", orDash(string(st.Backend)))
		d.line("  Gang object:\t%s", orDash(st.PodGroup))
		d.line("  Min available:\t%d", st.MinAvailable)
	} else {
		d.line("  Backend:\t%s (asked; not recorded by the operator yet)", spec.Backend)
	}
	if spec.VolcanoQueue != "" {
		d.line("  Volcano queue:\t%s", spec.VolcanoQueue)
	}
	if st != nil && st.Workload != "" {
		d.line("  Kueue LocalQueue:\t%s", orDash(st.LocalQueue))
		d.line("  Kueue Workload:\t%s", st.Workload)
		d.line("  Admitted by:\t%s", orDash(st.ClusterQueue))
	}
	if spec.PriorityClassName != "" {
		d.line("  Priority class:\t%s", spec.PriorityClassName)
	}
	for _, r := range spec.Roles {
		d.line("  Role minimum:\t%s %d", r.Name, r.MinAvailable)
	}
	if cond != nil {
		d.line("  GangScheduled:\t%s %s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

func (d *describer) tensorBoard() {
	tb := &d.job.Spec.TensorBoard
	cond := d.job.Status.Condition(musterv1.ConditionTensorBoardReady)
	if !tb.Enabled() && cond == nil {
		return
	}
	d.line("TensorBoard:")
	if tb.Enabled() {
		logs := tb.Logs.Volume
		if tb.Logs.SubPath != "" {
			logs += "/" + tb.Logs.SubPath
		}
		d.line("  Logs:\tvolume %s", logs)
		if tb.TTLSecondsAfterFinished != nil {
			d.line("  Kept:\t%ds after the job finishes", *tb.TTLSecondsAfterFinished)
		}
	}
	if st := d.job.Status.TensorBoard; st.Address != "" {
		d.line("  Address:\t%s (muster tensorboard %s)", st.Address, d.job.Name)
	}
	if cond != nil {
		d.line("  Ready:\t%s %s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

func (d *describer) attempts() {
	if len(d.job.Status.Attempts) == 0 {
		return
	}
	inPlace := slices.ContainsFunc(d.job.Status.Attempts, func(a musterv1.AttemptStatus) bool { return a.PodRestarts != nil })
	d.line("Attempts:")
	if inPlace {
		d.line("  ID\tSTARTED\tENDED\tREASON\tPODS\tMESSAGE")
	} else {
		d.line("  ID\tSTARTED\tENDED\tREASON\tMESSAGE")
	}
	for _, a := range d.job.Status.Attempts {
		reason, msg := "-", "-"
		if a.Completion != nil {
			reason, msg = string(a.Completion.Reason), a.Completion.Message
		}
		if !inPlace {
			d.line("  %d\t%s\t%s\t%s\t%s", a.ID, ago(a.StartTime, d.now), ago(a.CompletionTime, d.now), reason, msg)
			continue
		}
		d.line("  %d\t%s\t%s\t%s\t%s\t%s", a.ID, ago(a.StartTime, d.now), ago(a.CompletionTime, d.now), reason, podRestarts(a.PodRestarts), msg)
	}
}

// podRestarts says how an attempt's pods went on into the next.
func podRestarts(p *musterv1.PodRestarts) string {
	if p == nil {
		return "-"
	}
	out := fmt.Sprintf("%d in place", p.InPlace)
	if p.Recreated > 0 {
		out += fmt.Sprintf(", %d re-created", p.Recreated)
	}
	return out
}

func ago(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return Age(*t, now) + " ago"
}

func (d *describer) events(events []corev1.Event) {
	d.line("Events:")
	if len(events) == 0 {
		d.line("  <none>")
		return
	}
	d.line("  TYPE\tREASON\tAGE\tOBJECT\tMESSAGE")
	for i := range events {
		e := &events[i]
		age := Age(metav1.NewTime(EventTime(e)), d.now)
		if e.Count > 1 {
			age += fmt.Sprintf(" (x%d)", e.Count)
		}
		d.line("  %s\t%s\t%s\t%s\t%s", e.Type, e.Reason, age, lowerKind(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name, oneLine(e.Message))
	}
}

// LastExit says how a task's last pod ended: code, reason, phrase and
// class.
func LastExit(e *musterv1.ExitStatus) string {
	if e == nil {
		return "-"
	}
	parts := []string{fmt.Sprintf("code %d", e.Code)}
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	if e.Phrase != "" {
		parts = append(parts, e.Phrase)
	}
	parts = append(parts, e.Attributes...)
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// messageWidth is about how much of a failure's message describe shows on
// its line.
const messageWidth = 80

// messageEnd is the end of an exit's message, on one line. A crash says why
// last (Python's exception, after its traceback; status keeps a
// termination message's end for that reason), so whole lines are taken from
// the end while they fit messageWidth, the last always, and lines with no
// word in them (a traceback's ^^^ markers, a summary's === rules) are left
// out. "…" marks that earlier lines were.
func messageEnd(s string) string {
	lines := strings.Split(s, "\n")
	var kept []string
	width, more := 0, false
	for i := len(lines) - 1; i >= 0; i-- {
		l := oneLine(lines[i])
		if !hasWord(l) {
			continue
		}
		if n := utf8.RuneCountInString(l); len(kept) == 0 || width+1+n <= messageWidth {
			kept, width = append(kept, l), width+1+n
			continue
		}
		more = true
		break
	}
	slices.Reverse(kept)
	out := strings.Join(kept, " ")
	if more && !strings.HasPrefix(out, "…") {
		out = "… " + out
	}
	return out
}

// hasWord is whether s has a letter or a digit.
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// mpi names an MPI job's SSH Secret, which its pods mount.
func (d *describer) mpi() {
	if rt := d.job.Spec.Runtime; rt == nil || rt.MPI == nil {
		return
	}
	d.line("MPI:")
	if name := d.job.Status.MPI.SSHSecretName; name != "" {
		d.line("  SSH Secret:\t%s", name)
		return
	}
	d.line("  SSH Secret:\t- (not made yet: no pod is created before it is)")
}
