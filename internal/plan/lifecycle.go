package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/text"
)

// The job-wide gates of spec.run: execution (Create holds, Stop ends),
// suspend and resume, the end of a job and its TTL.

func ensureService(c *planContext, st *musterv1.TrainingJobStatus, hasService bool, out *Result) {
	if !hasService {
		out.CreateService = objects.DesiredService(c.job)
	}
	if !st.IsTrue(musterv1.ConditionCreated) {
		c.setCondition(st, musterv1.ConditionCreated, true, musterv1.ReasonCreated, "the job was accepted and its Service made")
	}
}

// hold keeps a job created with spec.run.execution Create: nothing is made
// for it, so the user can prepare what it will use before starting it.
func hold(c *planContext, st *musterv1.TrainingJobStatus) {
	c.setCondition(st, musterv1.ConditionCreated, false, musterv1.ReasonHeld,
		"spec.run.execution is Create: nothing is created until it is Start")
}

// stop ends the job at once as Failed with reason Stopped. The object and
// its status stay; running pods go as spec.run.cleanPodPolicy says.
func stop(c *planContext, st *musterv1.TrainingJobStatus, out *Result) {
	finish(c, st, Outcome{NoRetry: true, Completion: musterv1.CompletionStatus{
		Reason:  musterv1.ReasonStopped,
		Message: "spec.run.execution is Stop: the job was stopped",
		Code:    new(int32(failure.CodeStopRequested)),
		Phrase:  "StopRequested",
	}}, out)
}

// maxCompletionMessageLen bounds status.completion.message, which may
// carry every field error of an invalid spec.
const maxCompletionMessageLen = 1024

// bounded is c with its message cut to what status allows.
func bounded(c musterv1.CompletionStatus) musterv1.CompletionStatus {
	c.Message = text.Head(c.Message, maxCompletionMessageLen)
	return c
}

// finish records the outcome and stops what should not outlive the job.
// Nothing is created for a finished job, ever.
func finish(c *planContext, st *musterv1.TrainingJobStatus, o Outcome, out *Result) {
	out.CreatePods = nil
	st.CompletionTime = new(c.now)
	st.Completion = new(bounded(o.Completion))
	cond, reason := musterv1.ConditionFailed, o.Completion.Reason
	if o.Succeeded {
		cond = musterv1.ConditionSucceeded
	}
	c.setCondition(st, cond, true, reason, o.Completion.Message)
	out.event(!o.Succeeded, musterv1.EndedEventReason(reason), o.Completion.Message)
	removeStore(c, "finished", out)
	cleanUp(c, st, out)
	stopWaiting(c, st)
	expireTTL(c, st, out)
}

// stopWaiting ends the tasks a finished job will never run again: those
// waiting for a pod, or for a replacement, are Stopped, so a finished job's
// status shows nothing still to happen.
func stopWaiting(c *planContext, st *musterv1.TrainingJobStatus) {
	for i := range st.Roles {
		for j := range st.Roles[i].Tasks {
			t := &st.Roles[i].Tasks[j]
			switch {
			case t.State == musterv1.TaskCreating, t.State == musterv1.TaskRestarting:
				t.State = musterv1.TaskStopped
			case t.State == musterv1.TaskPending && c.pods.Tasks[t.Pod] == nil:
				t.State = musterv1.TaskStopped
			}
		}
	}
}

// cleanUp deletes the pods spec.run.cleanPodPolicy says a finished job does
// not keep, and marks their tasks stopped.
func cleanUp(c *planContext, st *musterv1.TrainingJobStatus, out *Result) {
	// The rendezvous store is the job's plumbing, not a task: it never
	// outlives the job.
	removeStore(c, "finished", out)
	clean := c.job.Spec.Run.CleanPodPolicy
	if clean == musterv1.CleanPodPolicyNone {
		// A pod that restarts in place and still runs after its task
		// failed runs the failed task again (rerunsInPlace): it goes
		// whatever the policy.
		for _, pod := range c.pods.Current() {
			if ts := taskOf(st, pod); ts != nil && ts.State == musterv1.TaskFailed && rerunsInPlace(pod) {
				out.deletePod(pod, "finished")
			}
		}
		return
	}
	for _, pod := range c.pods.Current() {
		ended := observe.Ended(pod)
		if clean == musterv1.CleanPodPolicyAll || !ended {
			out.deletePod(pod, "finished")
			if !ended {
				markStopped(st, pod.Name)
			}
		}
	}
}

func markStopped(st *musterv1.TrainingJobStatus, podName string) {
	for i := range st.Roles {
		for j := range st.Roles[i].Tasks {
			t := &st.Roles[i].Tasks[j]
			if t.Pod == podName && t.State != musterv1.TaskSucceeded && t.State != musterv1.TaskFailed {
				t.State = musterv1.TaskStopped
			}
		}
	}
}

// expireTTL deletes the job once spec.run.ttlSecondsAfterFinished has passed.
func expireTTL(c *planContext, st *musterv1.TrainingJobStatus, out *Result) {
	ttl := c.job.Spec.Run.TTLSecondsAfterFinished
	if ttl == nil || st.CompletionTime == nil {
		return
	}
	left := st.CompletionTime.Add(time.Duration(*ttl) * time.Second).Sub(c.now.Time)
	if left > 0 {
		out.RequeueWithin(left)
		return
	}
	if c.job.DeletionTimestamp == nil {
		out.DeleteJob = true
	}
}

// suspend deletes the job's pods and keeps the job, for the reason given:
// spec.run.execution Suspend, a SuspendJob rule, or a queue manager that
// has not admitted it. Stopped tasks are recreated on resume without
// counting as restarts; tasks that already ended stay ended.
func suspend(c *planContext, st *musterv1.TrainingJobStatus, out *Result, reason musterv1.ConditionReason, message string) {
	// A suspended job is not short of workers: the clock starts anew on
	// resume.
	if st.Elastic != nil {
		st.Elastic.BelowMinSince = nil
	}
	for _, pod := range c.pods.Current() {
		out.deletePod(pod, "suspended")
	}
	removeStore(c, "suspended", out)
	for i := range st.Roles {
		for j := range st.Roles[i].Tasks {
			t := &st.Roles[i].Tasks[j]
			if t.State != musterv1.TaskSucceeded && t.State != musterv1.TaskFailed {
				t.State = musterv1.TaskStopped
			}
		}
	}
	st.StartTime = nil
	switch cond := st.Condition(musterv1.ConditionSuspended); {
	case cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != string(reason):
		c.setCondition(st, musterv1.ConditionSuspended, true, reason, message)
		out.event(false, musterv1.EventReason(reason), "job suspended: "+message)
	case cond.Message != text.Head(message, maxMessageLen):
		// The same hold, said anew (a queue manager's latest word on why
		// the job waits): the condition follows, without another event.
		c.setCondition(st, musterv1.ConditionSuspended, true, reason, message)
	}
}

func resume(c *planContext, st *musterv1.TrainingJobStatus, out *Result) {
	if st.IsTrue(musterv1.ConditionSuspended) {
		c.setCondition(st, musterv1.ConditionSuspended, false, musterv1.ReasonResumed, "the job runs: not suspended, and admitted where a queue holds it")
		out.event(false, musterv1.EventReasonResumed, "job resumed: creating its pods")
	}
}
