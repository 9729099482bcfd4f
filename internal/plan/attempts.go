package plan

import (
	"hash/fnv"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/policy"
)

// maxAttemptHistory bounds status.attempts.
const maxAttemptHistory = 10

// jobRestart is a restart of the whole job (a new attempt) decided in the
// current plan.
type jobRestart struct {
	message     string
	accountable bool
	// retry: spec.retry asked for it, so it also counts in status.retries.
	retry bool
}

// restartJob asks for a new attempt of the whole job: a gang restart. It
// needs restarts left in spec.failurePolicy.backoffLimit when it counts.
func (p *planner) restartJob(message string, accountable bool) {
	if p.restart != nil || p.outcome != nil {
		return
	}
	if accountable && p.status.Restarts.Accountable >= backoffLimit(p.job) {
		p.failForGood(musterv1.CompletionStatus{
			Reason:  musterv1.ReasonBackoffLimitExceeded,
			Message: message + ", but the job has used all the restarts of spec.failurePolicy.backoffLimit",
		})
		return
	}
	p.restart = &jobRestart{message: message, accountable: accountable}
}

// retry puts a finished attempt to spec.failurePolicy.retry. It returns
// whether a new attempt was started instead of finishing the job.
func (p *planner) retry() bool {
	o := p.outcome
	r := p.job.Spec.FailurePolicy.Retry
	if o.NoRetry || r == nil {
		return false
	}
	d := policy.ShouldRetry(
		policy.RetryPolicy{MaxRetries: ptr.Deref(r.MaxRetries, 0), Always: r.Policy == musterv1.RetryAlways, ClassifyFailures: p.classify},
		policy.RetryStatus{Total: p.status.Retries.Total, Accountable: p.status.Retries.Accountable},
		completionOf(o))
	if !d.Retry {
		if o.Completion.Message != "" && !o.Succeeded {
			o.Completion.Message += "; not retried: " + d.Reason
		}
		return false
	}
	countsAgainstBudget := d.Accountable && !o.Succeeded
	if countsAgainstBudget && p.status.Restarts.Accountable >= backoffLimit(p.job) {
		o.Completion.Message += "; not retried: the job has used all the restarts of spec.failurePolicy.backoffLimit"
		return false
	}
	p.restart = &jobRestart{message: "retrying the job (" + d.Reason + ") after: " + o.Completion.Message,
		accountable: countsAgainstBudget, retry: true}
	delay := policy.JobRetryDelay(policy.RetryPolicy{ClassifyFailures: p.classify}, completionOf(o),
		conflictDelay(r), p.random())
	p.newAttempt()
	if delay > 0 {
		p.status.NextAttemptTime = new(metav1.NewTime(p.now.Add(delay)))
		p.event(false, musterv1.ReasonJobRestarting, "the new attempt waits "+delay.String()+" after a resource conflict")
	}
	return true
}

// holdForDelay keeps a delayed attempt from creating pods until its time.
func (p *planner) holdForDelay() bool {
	t := p.status.NextAttemptTime
	if t == nil {
		return false
	}
	if left := t.Sub(p.now.Time); left > 0 {
		p.requeue(left)
		return true
	}
	p.status.NextAttemptTime = nil
	return false
}

func conflictDelay(r *musterv1.RetryPolicy) policy.DelayRange {
	d := r.ConflictDelaySeconds
	if d.Min == nil || d.Max == nil {
		return policy.DelayRange{Min: policy.DefaultConflictDelayMin, Max: policy.DefaultConflictDelayMax}
	}
	return policy.DelayRange{Min: time.Duration(*d.Min) * time.Second, Max: time.Duration(*d.Max) * time.Second}
}

// random is a source seeded by the job and its attempt: replanning the same
// decision draws the same delay, so the plan stays a pure function.
func (p *planner) random() *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p.job.UID))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(p.status.Attempt)))
}

// newAttempt ends the current attempt and starts the next: every task is
// restarted, and every pod of the old attempt is deleted before its
// replacement is created. The decision is in status before any pod goes,
// and events from the old attempt's pods are ignored from then on: they
// no longer match the attempt label.
func (p *planner) newAttempt() {
	r := p.restart
	ended := musterv1.AttemptStatus{ID: p.status.Attempt, StartTime: p.attemptStart(), CompletionTime: new(p.now)}
	if p.outcome != nil {
		ended.Completion = new(bounded(p.outcome.Completion))
	} else {
		ended.Completion = new(bounded(musterv1.CompletionStatus{Reason: musterv1.ReasonJobRestarting, Message: r.message}))
	}
	p.status.Attempts = append(p.status.Attempts, ended)
	if n := len(p.status.Attempts); n > maxAttemptHistory {
		p.status.Attempts = p.status.Attempts[n-maxAttemptHistory:]
	}
	p.outcome = nil
	p.status.Completion = nil
	p.status.Attempt++
	// A new attempt starts short of workers by design: the elastic
	// minimum's clock starts anew with it.
	if p.status.Elastic != nil {
		p.status.Elastic.BelowMinSince = nil
	}
	p.status.Restarts.Total++
	if r.accountable {
		p.status.Restarts.Accountable++
	}
	if r.retry {
		p.status.Retries.Total++
		if r.accountable {
			p.status.Retries.Accountable++
		}
	}
	for i := range p.status.Roles {
		rs := &p.status.Roles[i]
		// A new attempt starts from the spec: scale-down leftovers go.
		rs.Tasks = rs.Tasks[:min(int(rs.Replicas), len(rs.Tasks))]
		for j := range rs.Tasks {
			t := &rs.Tasks[j]
			t.State = musterv1.TaskRestarting
			t.PodUID = ""
			t.DeletionPending = false
		}
	}
	for _, pod := range p.currentPods() {
		p.deletePod(pod, "new attempt")
	}
	p.removeStore("new attempt")
	p.res.CreatePods = nil
	p.event(false, musterv1.ReasonJobRestarting, r.message)
}

// attemptStart is when the current attempt began: when the previous one
// ended, or when the job started.
func (p *planner) attemptStart() *metav1.Time {
	if n := len(p.status.Attempts); n > 0 && p.status.Attempts[n-1].ID == p.status.Attempt-1 {
		return p.status.Attempts[n-1].CompletionTime
	}
	return p.status.StartTime
}

// completionOf is a job outcome in the terms of the retry policy.
func completionOf(o *Outcome) policy.Completion {
	c := policy.Completion{Type: policy.CompletionFailed}
	if o.Succeeded {
		c.Type = policy.CompletionSucceeded
	}
	if o.Completion.Code != nil {
		c.Code = *o.Completion.Code
	}
	for _, a := range o.Completion.Attributes {
		c.Attributes = append(c.Attributes, policy.Attribute(a))
	}
	if o.Completion.Reason == musterv1.ReasonDeadlineExceeded {
		c.Attributes = []policy.Attribute{policy.AttributePermanent}
	}
	return c
}

// gangRestarts is whether a restart the role's restartPolicy decides
// restarts the whole job rather than the task's pod: in the static roles of
// a PyTorch job one lost rank breaks the process group of all. A failure
// rule with action RestartTask or RestartJob chooses otherwise.
func gangRestarts(job *musterv1.TrainingJob, role *musterv1.Role) bool {
	rt := job.Spec.Runtime
	return rt != nil && rt.PyTorch != nil && !topology.IsElastic(job, role.Name)
}
