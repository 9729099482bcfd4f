package plan

import (
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// finish records the outcome and stops what should not outlive the job.
// Nothing is created for a finished job, ever.
func (p *planner) finish() {
	o := p.outcome
	p.res.CreatePods = nil
	p.status.CompletionTime = new(p.now)
	p.status.Completion = new(bounded(o.Completion))
	cond, reason := musterv1.ConditionFailed, o.Completion.Reason
	if o.Succeeded {
		cond = musterv1.ConditionSucceeded
	}
	p.setCondition(cond, true, reason, o.Completion.Message)
	p.event(!o.Succeeded, reason, o.Completion.Message)
	p.removeStore("finished")
	p.cleanUp()
	p.stopWaiting()
	p.expireTTL()
}

// stopWaiting ends the tasks a finished job will never run again: those
// waiting for a pod, or for a replacement, are Stopped, so a finished job's
// status shows nothing still to happen.
func (p *planner) stopWaiting() {
	for i := range p.status.Roles {
		for j := range p.status.Roles[i].Tasks {
			t := &p.status.Roles[i].Tasks[j]
			switch {
			case t.State == musterv1.TaskCreating, t.State == musterv1.TaskRestarting:
				t.State = musterv1.TaskStopped
			case t.State == musterv1.TaskPending && p.pods[t.Pod] == nil:
				t.State = musterv1.TaskStopped
			}
		}
	}
}

// cleanUp deletes the pods spec.run.cleanPodPolicy says a finished job does
// not keep, and marks their tasks stopped.
func (p *planner) cleanUp() {
	// The rendezvous store is the job's plumbing, not a task: it never
	// outlives the job.
	p.removeStore("finished")
	policy := p.job.Spec.Run.CleanPodPolicy
	if policy == musterv1.CleanPodPolicyNone {
		return
	}
	for _, pod := range p.currentPods() {
		ended := podEnded(pod)
		if policy == musterv1.CleanPodPolicyAll || !ended {
			p.deletePod(pod, "finished")
			if !ended {
				p.markStopped(pod.Name)
			}
		}
	}
}

func (p *planner) markStopped(podName string) {
	for i := range p.status.Roles {
		for j := range p.status.Roles[i].Tasks {
			t := &p.status.Roles[i].Tasks[j]
			if t.Pod == podName && t.State != musterv1.TaskSucceeded && t.State != musterv1.TaskFailed {
				t.State = musterv1.TaskStopped
			}
		}
	}
}

// expireTTL deletes the job once spec.run.ttlSecondsAfterFinished has passed.
func (p *planner) expireTTL() {
	ttl := p.job.Spec.Run.TTLSecondsAfterFinished
	if ttl == nil || p.status.CompletionTime == nil {
		return
	}
	left := p.status.CompletionTime.Add(time.Duration(*ttl) * time.Second).Sub(p.now.Time)
	if left > 0 {
		p.requeue(left)
		return
	}
	if p.job.DeletionTimestamp == nil {
		p.res.DeleteJob = true
	}
}

// suspend deletes every pod and keeps the job. Stopped tasks are recreated
// on resume without counting as restarts; tasks that already ended stay
// ended.
func (p *planner) suspend() {
	// A suspended job is not short of workers: the clock starts anew on
	// resume.
	if p.status.Elastic != nil {
		p.status.Elastic.BelowMinSince = nil
	}
	for _, pod := range p.currentPods() {
		p.deletePod(pod, "suspended")
	}
	p.removeStore("suspended")
	for i := range p.status.Roles {
		for j := range p.status.Roles[i].Tasks {
			t := &p.status.Roles[i].Tasks[j]
			if t.State != musterv1.TaskSucceeded && t.State != musterv1.TaskFailed {
				t.State = musterv1.TaskStopped
			}
		}
	}
	p.status.StartTime = nil
	if !p.status.IsTrue(musterv1.ConditionSuspended) {
		p.setCondition(musterv1.ConditionSuspended, true, musterv1.ReasonSuspended, "spec.run.suspend is true: the job has no pods")
		p.event(false, musterv1.ReasonSuspended, "job suspended: deleting its pods")
	}
}

func (p *planner) resume() {
	if p.status.IsTrue(musterv1.ConditionSuspended) {
		p.setCondition(musterv1.ConditionSuspended, false, musterv1.ReasonResumed, "spec.run.suspend is false")
		p.event(false, musterv1.ReasonResumed, "job resumed: creating its pods")
	}
}

func isFinished(s *musterv1.TrainingJobStatus) bool {
	return s.IsTrue(musterv1.ConditionSucceeded) ||
		s.IsTrue(musterv1.ConditionFailed)
}

func apiCondition(s *musterv1.TrainingJobStatus, t musterv1.ConditionType) *metav1.Condition {
	return s.Condition(t)
}

func (p *planner) setCondition(t musterv1.ConditionType, status bool, reason, msg string) {
	c := metav1.Condition{
		Type:               string(t),
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            truncate(msg),
		ObservedGeneration: p.job.Generation,
		LastTransitionTime: p.now,
	}
	if status {
		c.Status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&p.status.Conditions, c)
}
