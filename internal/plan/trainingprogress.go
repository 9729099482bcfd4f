package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/trainingprogress"
)

// ProgressRead is what the controller read of a job's training progress
// (spec.progress) when a read was due: a report and the pod that served
// it, or why a pod's answer could not be read. Neither, when no pod serves
// one yet.
type ProgressRead struct {
	Report   *trainingprogress.Report
	Reporter string
	// Unreadable is a pod's answer that was no report, with why.
	Unreadable string
}

// trainingProgressStep takes a report into status.progress. Its write is
// the read's: the controller reads at most once per
// spec.progress.intervalSeconds, so a job's progress costs at most one
// status write per interval, whatever its program sends.
func trainingProgressStep(c *planContext, st *musterv1.TrainingJobStatus, read *ProgressRead, out *Result) {
	if !c.job.Spec.Progress.Enabled() {
		st.Progress = nil
		apimeta.RemoveStatusCondition(&st.Conditions, string(musterv1.ConditionStalled))
		return
	}
	switch {
	case read == nil:
		if pod, r := finalReport(c, st.Progress); r != nil {
			st.Progress = trainingprogress.Apply(st.Progress, *r, pod, c.now.Time)
		}
	case read.Report != nil:
		st.Progress = trainingprogress.Apply(st.Progress, *read.Report, read.Reporter, c.now.Time)
	case read.Unreadable != "":
		out.event(true, musterv1.EventReasonProgressUnreadable, read.Unreadable)
	}
}

// finalReport is the report a pod left as its container's termination
// message when it ended: a program's last report, which no read could
// take from a pod that has ended (the examples' muster_progress writes it
// at exit). It is taken from a pod that succeeded, or from one that was
// stopped (the job's end deletes the pods still running, and rank 0 may
// end a moment after the task that ended the job), then with a position:
// a stopped container that wrote no message may leave the tail of its
// log. Another pod than the one that served the reports is taken only if
// its report is not behind them: an old end must not undo the reporter's
// newer reads, but rank 0 may have moved since the last read.
func finalReport(c *planContext, prev *musterv1.ProgressStatus) (string, *trainingprogress.Report) {
	names := make([]string, 0, len(c.pods.Tasks))
	for name, pod := range c.pods.Tasks {
		if pod.Status.Phase == corev1.PodSucceeded || pod.DeletionTimestamp != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		pod := c.pods.Tasks[name]
		for _, cs := range pod.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil || !strings.HasPrefix(t.Message, "{") {
				continue
			}
			succeeded := t.ExitCode == 0 && pod.Status.Phase == corev1.PodSucceeded
			if r, err := trainingprogress.Parse([]byte(t.Message)); err == nil && (succeeded || r.HasPosition()) &&
				(prev == nil || prev.Reporter == name || trainingprogress.NotBehind(prev, r)) {
				return name, &r
			}
		}
	}
	return "", nil
}

// finalReportWait is how long past its grace period a finished job holds a
// stopped pod that has not ended, for the report it may leave.
const finalReportWait = 30 * time.Second

// awaitFinalReports holds the tracking finalizer of every task pod a
// finished job with spec.progress stopped, until the pod has ended or
// finalReportWait has passed since its grace period did: a pod released
// while it stops leaves the API the moment its node is done with it, and
// its last report with it (finalReport). Holding costs the pods nothing:
// they stop as they would, and only their objects stay a moment longer.
func awaitFinalReports(c *planContext, st *musterv1.TrainingJobStatus, out *Result) {
	if !isFinished(st) || !c.job.Spec.Progress.Enabled() {
		return
	}
	for _, pod := range c.pods.Current() {
		if pod.DeletionTimestamp == nil || observe.Ended(pod) {
			continue
		}
		if left := pod.DeletionTimestamp.Add(finalReportWait).Sub(c.now.Time); left > 0 {
			c.endsLater[pod.UID] = true
			out.RequeueWithin(left)
		}
	}
}

// stallEvents makes the job Stalled when its reported progress has not
// moved for spec.progress.stallSeconds, and raises the Stalled event for
// the failure rules. The time counts from the progress's last move or the
// current attempt's start, whichever is later: a restarted job has the
// whole time again to report.
func (a *applier) stallEvents() {
	spec, p := a.c.job.Spec.Progress, a.st.Progress
	if !spec.Enabled() || spec.StallSeconds == 0 || p == nil || p.LastProgressTime == nil {
		apimeta.RemoveStatusCondition(&a.st.Conditions, string(musterv1.ConditionStalled))
		return
	}
	var notBefore time.Time
	if start := attemptStart(a.st); start != nil {
		notBefore = start.Time
	}
	stalled, since, left := trainingprogress.Stalled(p, time.Duration(spec.StallSeconds)*time.Second, notBefore, a.c.now.Time)
	if !stalled {
		a.c.setCondition(a.st, musterv1.ConditionStalled, false, musterv1.ReasonProgressing,
			fmt.Sprintf("progress last moved at %s", since.UTC().Format(time.RFC3339)))
		a.out.RequeueWithin(left)
		return
	}
	why := fmt.Sprintf("the job's progress has not moved for %ds, since %s", spec.StallSeconds, since.UTC().Format(time.RFC3339))
	if cond := a.st.Condition(musterv1.ConditionStalled); cond == nil || cond.Status != metav1.ConditionTrue {
		a.out.event(true, musterv1.EventReasonStalled, why)
	}
	a.c.setCondition(a.st, musterv1.ConditionStalled, true, musterv1.ReasonStalled, why)
	if i, ok := a.match(failure.Observed{Event: musterv1.EventStalled}); ok {
		a.applyRule(i, failureCase{accountable: true, why: why})
	}
}
