package plan

import (
	"fmt"
	"time"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/policy"
)

// failureCase is an event an action is taken on: a task's pod that ended
// or has not started (task set), every task of a role that succeeded or one
// that failed for good (role set), or the whole job (neither).
type failureCase struct {
	role        *musterv1.Role
	task        *musterv1.TaskStatus
	pod         *corev1.Pod
	accountable bool
	why         string
	// reason is the job's completion reason if the action ends the job.
	reason string
}

// actions is what each action does, whether a failure rule or a restart
// policy chose it. The planner looks an action up here and nowhere else, so
// the table is the whole meaning of an action. It is filled in init
// because the actions themselves raise events that take actions.
var actions map[musterv1.FailureAction]func(*planner, failureCase)

func init() {
	actions = map[musterv1.FailureAction]func(*planner, failureCase){
		actionSucceedTask: func(p *planner, c failureCase) {
			p.settle(c.task, true)
		},
		musterv1.ActionRestartTask: func(p *planner, c failureCase) {
			p.restartTask(c.role, c.task, c.pod, c.accountable)
		},
		musterv1.ActionRestartRole: func(p *planner, c failureCase) {
			p.roleRestarts[c.role.Name] = c.why
			markEnded(c.task)
		},
		musterv1.ActionRestartJob: func(p *planner, c failureCase) {
			markEnded(c.task)
			p.restartJob(c.why, c.accountable)
		},
		musterv1.ActionFailTask: func(p *planner, c failureCase) {
			p.settle(c.task, false)
			if c.pod != nil && !podEnded(c.pod) {
				// A pod that never started: the task is over.
				p.deletePod(c.pod, "failed by a rule")
			}
			p.taskFailedRule(c.role, c.task)
		},
		musterv1.ActionFailJob: func(p *planner, c failureCase) {
			markEnded(c.task)
			p.fail(p.completionOf(c))
		},
		musterv1.ActionTerminateJob: func(p *planner, c failureCase) {
			markEnded(c.task)
			p.failForGood(p.completionOf(c))
		},
		musterv1.ActionCompleteJob: func(p *planner, c failureCase) {
			markEnded(c.task)
			if p.outcome == nil {
				p.outcome = &Outcome{Succeeded: true, Completion: p.completionOf(c)}
			}
		},
		musterv1.ActionSuspendJob: func(p *planner, c failureCase) {
			p.suspendByPolicy(c.why)
			if c.task != nil {
				// Made again when the job resumes.
				c.task.State = musterv1.TaskStopped
			}
		},
	}
}

// act carries out action for c.
func (p *planner) act(action musterv1.FailureAction, c failureCase) {
	actions[action](p, c)
}

// applyRule carries out failure rule i for an event of a role or the job.
func (p *planner) applyRule(i int, c failureCase) {
	action := p.job.Spec.FailurePolicy.Rules[i].Action
	c.why += fmt.Sprintf(", and spec.failurePolicy.rules[%d] has action %s", i, action)
	c.reason = ruleReasons[action]
	p.act(action, c)
}

// markEnded makes a task whose pod ended final, unless it succeeded.
func markEnded(ts *musterv1.TaskStatus) {
	if ts != nil && ts.State != musterv1.TaskSucceeded {
		ts.State = musterv1.TaskFailed
	}
}

// completionOf is the job's completion when an action ends it.
func (p *planner) completionOf(c failureCase) musterv1.CompletionStatus {
	out := musterv1.CompletionStatus{Reason: c.reason, Message: c.why}
	if c.role != nil {
		out.Role = c.role.Name
	}
	if c.task != nil {
		out = taskCompletion(c.reason, c.why, out.Role, c.task)
	}
	return out
}

// match finds the rule for an event, if the job is not already ending or
// restarting in this plan.
func (p *planner) match(obs policy.Observed) (int, bool) {
	if p.outcome != nil || p.restart != nil {
		return -1, false
	}
	return policy.Match(p.job.Spec.FailurePolicy.Rules, obs)
}

// suspendByPolicy asks the executor to set spec.run.suspend. The decision
// is a condition tied to the spec's generation, written first: if the
// operator dies before the spec is patched, pendingSuspend finds it and the
// patch is made again.
func (p *planner) suspendByPolicy(why string) {
	p.res.SuspendJob = true
	p.setCondition(musterv1.ConditionSuspended, true, musterv1.ReasonSuspendedByPolicy, "a lifecycle policy suspends the job: "+why)
	p.event(false, musterv1.ReasonSuspendedByPolicy, "suspending the job: "+why)
}

// pendingSuspend is whether a policy decided to suspend this generation of
// the spec and the spec does not say so yet.
func (p *planner) pendingSuspend() bool {
	c := apiCondition(p.status, musterv1.ConditionSuspended)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == musterv1.ReasonSuspendedByPolicy &&
		c.ObservedGeneration == p.job.Generation && !ptr.Deref(p.job.Spec.Run.Suspend, false)
}

// taskFailedRule raises TaskFailed for a task that failed for good.
func (p *planner) taskFailedRule(role *musterv1.Role, ts *musterv1.TaskStatus) {
	if i, ok := p.match(policy.Observed{Event: musterv1.EventTaskFailed, Role: role.Name}); ok {
		p.applyRule(i, failureCase{role: role, accountable: true, why: ts.Pod + " failed for good"})
	}
}

// roleEvents raises TaskCompleted when every task of a role has just
// succeeded.
func (p *planner) roleEvents(role *musterv1.Role, rs *musterv1.RoleStatus) {
	if rs.Replicas == 0 || !allSucceeded(rs) || allSucceeded(roleStatus(p.status, role.Name)) {
		return
	}
	if i, ok := p.match(policy.Observed{Event: musterv1.EventTaskCompleted, Role: role.Name}); ok {
		p.applyRule(i, failureCase{role: role, accountable: true, why: "every task of role " + role.Name + " succeeded"})
	}
}

func allSucceeded(rs *musterv1.RoleStatus) bool {
	if rs == nil || len(rs.Tasks) == 0 {
		return false
	}
	for _, t := range rs.Tasks {
		if counted(t) && t.State != musterv1.TaskSucceeded {
			return false
		}
	}
	return true
}

// checkPending applies a PodPending rule to a pod that has not started
// within the rule's timeout.
func (p *planner) checkPending(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod) {
	i, ok := p.match(policy.Observed{Event: musterv1.EventPodPending, Role: role.Name})
	if !ok {
		return
	}
	timeout := p.job.Spec.FailurePolicy.Rules[i].TimeoutSeconds
	due := pod.CreationTimestamp.Add(time.Duration(timeout) * time.Second)
	if left := due.Sub(p.now.Time); left > 0 {
		p.requeue(left)
		return
	}
	ts.LastExit = &musterv1.ExitStatus{
		PodUID: pod.UID, Reason: musterv1.ReasonPodPendingTimeout, FinishedAt: new(p.now),
		Message: fmt.Sprintf("the pod did not start within %ds", timeout),
	}
	p.applyRule(i, failureCase{role: role, task: ts, pod: pod, accountable: true,
		why: fmt.Sprintf("%s did not start within %ds", ts.Pod, timeout)})
}

// applyRoleRestarts restarts every task of the roles a policy restarted:
// one restart for the role, and each task's pod replaced.
func (p *planner) applyRoleRestarts() {
	for i := range p.status.Roles {
		rs := &p.status.Roles[i]
		why, ok := p.roleRestarts[rs.Name]
		if !ok || p.outcome != nil || p.restart != nil {
			continue
		}
		if p.status.Restarts.Accountable >= backoffLimit(p.job) {
			p.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonBackoffLimitExceeded, Role: rs.Name,
				Message: why + ", but the job has used all the restarts of spec.failurePolicy.backoffLimit"})
			return
		}
		p.status.Restarts.Total++
		p.status.Restarts.Accountable++
		p.event(false, musterv1.ReasonTaskRestarting, "restarting role "+rs.Name+": "+why)
		for j := range rs.Tasks {
			t := &rs.Tasks[j]
			if !counted(*t) {
				continue
			}
			t.State = musterv1.TaskRestarting
			t.Restarts++
			pod := p.pods[t.Pod]
			if pod == nil {
				continue
			}
			if !isEnded(t, pod.UID) {
				// Record which instance goes, so a crash before the delete
				// still deletes it on the next reconcile.
				t.LastExit = &musterv1.ExitStatus{PodUID: pod.UID, Reason: musterv1.ReasonRoleRestarted, Message: why, FinishedAt: new(p.now)}
			}
			p.deletePod(pod, "role restart")
		}
		p.res.CreatePods = removeRole(p.res.CreatePods, rs.Name)
	}
}

func removeRole(pods []*corev1.Pod, role string) []*corev1.Pod {
	out := pods[:0]
	for _, pod := range pods {
		if pod.Labels[musterv1.LabelRole] != role {
			out = append(out, pod)
		}
	}
	return out
}

// forceIfOverdue force-deletes a terminating pod once its role's graceful
// deletion timeout has passed since the deletion was asked.
func (p *planner) forceIfOverdue(pod *corev1.Pod, role *musterv1.Role) {
	if role == nil || role.GracefulDeletionTimeoutSeconds == nil || pod.DeletionTimestamp == nil {
		return
	}
	asked := pod.DeletionTimestamp.Time
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		asked = asked.Add(-time.Duration(*g) * time.Second)
	}
	due := asked.Add(time.Duration(*role.GracefulDeletionTimeoutSeconds) * time.Second)
	if left := due.Sub(p.now.Time); left > 0 {
		p.requeue(left)
		return
	}
	p.res.DeletePods = append(p.res.DeletePods, PodDeletion{Name: pod.Name, UID: pod.UID, Reason: "graceful deletion timeout", Force: true})
	p.event(true, musterv1.ReasonForceDeleted, fmt.Sprintf("force-deleting %s: still terminating %ds after its deletion was asked (spec.roles[].gracefulDeletionTimeoutSeconds)",
		pod.Name, *role.GracefulDeletionTimeoutSeconds))
}

// Unschedulable is whether the scheduler found no node for the pod.
func Unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// gangEvents raises PartlyPlaced when the job runs partly placed: some
// tasks run while the pods of others cannot be scheduled. A gang scheduler
// prevents that state; without one, a rule can react to it.
func (p *planner) gangEvents(roles []musterv1.RoleStatus) {
	if p.outcome != nil || p.restart != nil || !p.partlyPlaced(roles) {
		return
	}
	if i, ok := p.match(policy.Observed{Event: musterv1.EventPartlyPlaced}); ok {
		p.applyRule(i, failureCase{accountable: true, why: "the job is partly placed: some tasks run while others cannot be scheduled"})
	}
}

func (p *planner) partlyPlaced(roles []musterv1.RoleStatus) bool {
	running, stuck := false, false
	for _, rs := range roles {
		for _, t := range rs.Tasks {
			if !counted(t) {
				continue
			}
			if t.State == musterv1.TaskRunning {
				running = true
			}
			if pod := p.pods[t.Pod]; pod != nil && pod.Status.Phase == corev1.PodPending && Unschedulable(pod) {
				stuck = true
			}
		}
	}
	return running && stuck
}
