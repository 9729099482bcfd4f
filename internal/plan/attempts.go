package plan

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// maxAttemptHistory bounds status.attempts.
const maxAttemptHistory = 10

// jobRestart is a restart of the whole job (a new attempt) decided in the
// current plan.
type jobRestart struct {
	message     string
	accountable bool
	// retry: spec.failurePolicy.retry asked for it, so it also counts in
	// status.retries.
	retry bool
}

// retryDecision is what spec.failurePolicy.retry makes of a finished
// attempt: a new attempt (restart set), after delay, or the job's end with
// outcome, whose message says why it was not retried.
type retryDecision struct {
	restart *jobRestart
	delay   time.Duration
	outcome Outcome
}

// decideRetry puts a finished attempt to spec.failurePolicy.retry.
func decideRetry(c *planContext, st *musterv1.TrainingJobStatus, o Outcome) retryDecision {
	r := c.job.Spec.FailurePolicy.Retry
	if o.NoRetry || r == nil {
		return retryDecision{outcome: o}
	}
	d := failure.ShouldRetry(failure.RetryPolicyOf(r, c.policy.Classify),
		failure.RetryStatus{Total: st.Retries.Total, Accountable: st.Retries.Accountable},
		retryCompletion(o))
	if !d.Retry {
		if o.Completion.Message != "" && !o.Succeeded {
			o.Completion.Message += "; not retried: " + d.Reason
		}
		return retryDecision{outcome: o}
	}
	// A new attempt after a success counts too, as restartPolicy Always's
	// restart after a success does.
	countsAgainstBudget := d.Accountable
	if charge := c.policy.Budget.Charge(countsAgainstBudget, st.Restarts.Accountable, -1); charge != failure.Allowed {
		o.Completion.Message += "; not retried: the job has used " + c.policy.Budget.Exhausted(charge)
		return retryDecision{outcome: o}
	}
	return retryDecision{
		restart: &jobRestart{message: "retrying the job (" + d.Reason + ") after: " + o.Completion.Message,
			accountable: countsAgainstBudget, retry: true},
		delay: failure.JobRetryDelay(failure.RetryPolicy{ClassifyFailures: c.policy.Classify}, retryCompletion(o),
			conflictDelay(r), attemptRandom(c.job, st.Attempt)),
		outcome: o,
	}
}

// holdForDelay keeps a delayed attempt from creating pods until its time.
func holdForDelay(c *planContext, st *musterv1.TrainingJobStatus, out *Result) bool {
	t := st.NextAttemptTime
	if t == nil {
		return false
	}
	if left := t.Sub(c.now.Time); left > 0 {
		out.RequeueWithin(left)
		return true
	}
	st.NextAttemptTime = nil
	return false
}

func conflictDelay(r *musterv1.RetryPolicy) failure.DelayRange {
	d := r.ConflictDelaySeconds
	if d.Min == nil || d.Max == nil {
		return failure.DelayRange{Min: failure.DefaultConflictDelayMin, Max: failure.DefaultConflictDelayMax}
	}
	return failure.DelayRange{Min: time.Duration(*d.Min) * time.Second, Max: time.Duration(*d.Max) * time.Second}
}

// attemptRandom is a source seeded by the job and its attempt: replanning
// the same decision draws the same delay, so the plan stays a pure
// function.
func attemptRandom(job *musterv1.TrainingJob, attempt int32) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(job.UID))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(attempt)))
}

// newAttempt ends the current attempt and starts the next: every task is
// restarted, and every pod of the old attempt is deleted before its
// replacement is created. The decision is in status before any pod goes,
// and events from the old attempt's pods are ignored from then on: they
// no longer match the attempt label. ended is the outcome of the attempt
// that ends, nil for a restart that cut it short.
func newAttempt(c *planContext, st *musterv1.TrainingJobStatus, r jobRestart, ended *Outcome, out *Result) {
	record := musterv1.AttemptStatus{ID: st.Attempt, StartTime: attemptStart(st), CompletionTime: new(c.now)}
	if ended != nil {
		record.Completion = new(bounded(ended.Completion))
	} else {
		record.Completion = new(bounded(musterv1.CompletionStatus{Reason: musterv1.ReasonJobRestarting, Message: r.message}))
	}
	st.Attempts = append(st.Attempts, record)
	if n := len(st.Attempts); n > maxAttemptHistory {
		st.Attempts = st.Attempts[n-maxAttemptHistory:]
	}
	st.Completion = nil
	st.Attempt++
	// A new attempt starts short of workers by design: the elastic
	// minimum's clock starts anew with it.
	if st.Elastic != nil {
		st.Elastic.BelowMinSince = nil
	}
	st.Restarts.Total++
	if r.accountable {
		st.Restarts.Accountable++
	}
	if r.retry {
		st.Retries.Total++
		if r.accountable {
			st.Retries.Accountable++
		}
	}
	for i := range st.Roles {
		rs := &st.Roles[i]
		// A new attempt starts from the spec: scale-down leftovers go.
		rs.Tasks = rs.Tasks[:min(int(rs.Replicas), len(rs.Tasks))]
		for j := range rs.Tasks {
			t := &rs.Tasks[j]
			t.State = musterv1.TaskRestarting
			t.PodUID = ""
			t.DeletionPending = false
		}
	}
	moved := movePods(c, st, out)
	if msg := moved.message(); msg != "" {
		st.Attempts[len(st.Attempts)-1].PodRestarts = &musterv1.PodRestarts{
			InPlace: moved.inPlace, Recreated: moved.recreated, Message: msg}
		r.message += "; " + msg
	} else if moved.inPlace > 0 {
		st.Attempts[len(st.Attempts)-1].PodRestarts = &musterv1.PodRestarts{InPlace: moved.inPlace}
		r.message += fmt.Sprintf("; its %d pods restart in place", moved.inPlace)
	}
	removeStore(c, "new attempt", out)
	out.CreatePods = nil
	out.event(false, musterv1.EventReasonJobRestarting, r.message)
}

// movePods takes every pod of the attempt that ends into the next: in
// place where its role restarts in place and the pod can, else by deleting
// it (its replacement is created once it is gone). A job with a gang
// backend moves in place whole or not at all: a pod re-created among pods
// that kept their nodes might find its room taken (by the very preemptor
// that evicted it), leaving the gang half placed and holding its devices,
// so then every pod is re-created and the new attempt placed afresh.
func movePods(c *planContext, st *musterv1.TrainingJobStatus, out *Result) fallbacks {
	pods := c.pods.Current()
	inPlace, whyNot := make([]bool, len(pods)), make([]string, len(pods))
	for i, pod := range pods {
		inPlace[i], whyNot[i] = c.restartsInPlace(topology.Find(c.job, pod.Labels[musterv1.LabelRole]), pod)
	}
	lost := -1
	for i := range pods {
		if !inPlace[i] && whyNot[i] != "" {
			lost = i
			break
		}
	}
	if c.gang && lost >= 0 {
		for i := range pods {
			if inPlace[i] {
				inPlace[i], whyNot[i] = false, "its gang is placed afresh: "+pods[lost].Name+" cannot restart in place"
			}
		}
	}
	var f fallbacks
	for i, pod := range pods {
		if !inPlace[i] {
			out.deletePod(pod, "new attempt")
			if whyNot[i] != "" {
				// Re-created though its role restarts in place.
				f.add(pod, whyNot[i])
			}
			continue
		}
		out.restartInPlace(pod, st.Attempt, nextInstance(taskOf(st, pod), pod), "new attempt")
		f.inPlace++
	}
	return f
}

// taskOf is pod's task in status, or nil.
func taskOf(st *musterv1.TrainingJobStatus, pod *corev1.Pod) *musterv1.TaskStatus {
	rs := roleStatus(st, pod.Labels[musterv1.LabelRole])
	if rs == nil {
		return nil
	}
	for i := range rs.Tasks {
		if rs.Tasks[i].Pod == pod.Name {
			return &rs.Tasks[i]
		}
	}
	return nil
}

// attemptStart is when the current attempt began: when the previous one
// ended, or when the job started.
func attemptStart(st *musterv1.TrainingJobStatus) *metav1.Time {
	if n := len(st.Attempts); n > 0 && st.Attempts[n-1].ID == st.Attempt-1 {
		return st.Attempts[n-1].CompletionTime
	}
	return st.StartTime
}

// retryCompletion is a job outcome in the terms of the retry policy.
func retryCompletion(o Outcome) failure.Completion {
	c := failure.Completion{Type: failure.CompletionFailed}
	if o.Succeeded {
		c.Type = failure.CompletionSucceeded
	}
	if o.Completion.Code != nil {
		c.Code = *o.Completion.Code
	}
	for _, a := range o.Completion.Attributes {
		c.Attributes = append(c.Attributes, failure.Attribute(a))
	}
	if o.Completion.Reason == musterv1.ReasonDeadlineExceeded {
		c.Attributes = []failure.Attribute{failure.AttributePermanent}
	}
	return c
}
