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

// policiesOf is spec.policies in the terms of package policy.
func policiesOf(job *musterv1.TrainingJob) []policy.Policy {
	out := make([]policy.Policy, 0, len(job.Spec.Policies))
	for _, lp := range job.Spec.Policies {
		pol := policy.Policy{Role: lp.Role, Action: policy.Action(lp.Action), ExitCodes: lp.ExitCodes, TimeoutSeconds: lp.TimeoutSeconds}
		for _, e := range lp.Events {
			pol.Events = append(pol.Events, policy.Event(e))
		}
		out = append(out, pol)
	}
	return out
}

// evictionCodes are the completion codes of pods the infrastructure took
// away: they raise PodEvicted rather than PodFailed.
var evictionCodes = map[int32]bool{
	policy.CodePodDeletedExternally: true, policy.CodePodEvicted: true, policy.CodePodNodeLost: true,
	policy.CodePodPreempted: true, policy.CodePodNodeShutdown: true, policy.CodePodDisrupted: true,
	policy.CodePodOutOfResource: true,
}

// matchPodPolicy finds the policy for a failed or vanished pod.
func (p *planner) matchPodPolicy(role *musterv1.Role, pod *corev1.Pod, exit musterv1.ExitStatus) (policy.Policy, bool) {
	obs := policy.Observed{Event: policy.EventPodFailed, Role: role.Name, ExitCode: new(exit.Code)}
	if pod == nil || evictionCodes[exit.CompletionCode] {
		obs = policy.Observed{Event: policy.EventPodEvicted, Role: role.Name}
	}
	return policy.Match(p.policies, obs)
}

// act carries out a policy's action for a task whose pod ended.
func (p *planner) act(pol policy.Policy, role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod, accountable bool) {
	why := fmt.Sprintf("%s (%s) matched a policy with action %s", ts.Pod, describeExit(*ts.LastExit), pol.Action)
	switch pol.Action {
	case policy.ActionRestartPod:
		p.restartTask(role, ts, pod, accountable)
		return
	case policy.ActionRestartRole:
		p.roleRestarts[role.Name] = why
	case policy.ActionRestartJob:
		p.restartJob(why, accountable)
	case policy.ActionSuspendJob:
		p.suspendByPolicy(why)
		// Made again when the job resumes.
		ts.State = musterv1.TaskStopped
		return
	default:
		p.endByPolicy(pol.Action, why, role.Name, ts)
	}
	if ts.State != musterv1.TaskSucceeded {
		ts.State = musterv1.TaskFailed
	}
}

// endByPolicy ends the job as CompleteJob, FailJob or TerminateJob say.
func (p *planner) endByPolicy(a policy.Action, why, role string, ts *musterv1.TaskStatus) {
	c := musterv1.CompletionStatus{Message: why, Role: role}
	if ts != nil {
		c = taskCompletion("", why, role, ts)
	}
	switch a {
	case policy.ActionCompleteJob:
		c.Reason = musterv1.ReasonPolicyCompleted
		if p.outcome == nil {
			p.outcome = &Outcome{Succeeded: true, Completion: c}
		}
	case policy.ActionFailJob:
		c.Reason = musterv1.ReasonPolicyFailed
		p.fail(c)
	case policy.ActionTerminateJob:
		c.Reason = musterv1.ReasonTerminated
		p.failForGood(c)
	}
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

// taskFailedPolicy raises TaskFailed for a task that failed for good.
func (p *planner) taskFailedPolicy(role *musterv1.Role, ts *musterv1.TaskStatus) {
	pol, ok := policy.Match(p.policies, policy.Observed{Event: policy.EventTaskFailed, Role: role.Name})
	if ok && p.outcome == nil && p.restart == nil {
		p.actOnRole(pol, role, fmt.Sprintf("%s failed for good, and a policy on TaskFailed has action %s", ts.Pod, pol.Action), ts)
	}
}

// roleEvents raises TaskCompleted when every task of a role has just
// succeeded.
func (p *planner) roleEvents(role *musterv1.Role, rs *musterv1.RoleStatus) {
	if rs.Replicas == 0 || !allSucceeded(rs) || allSucceeded(roleStatus(p.status, role.Name)) {
		return
	}
	pol, ok := policy.Match(p.policies, policy.Observed{Event: policy.EventTaskCompleted, Role: role.Name})
	if ok && p.outcome == nil && p.restart == nil {
		p.actOnRole(pol, role, fmt.Sprintf("every task of role %s succeeded, and a policy on TaskCompleted has action %s", role.Name, pol.Action), nil)
	}
}

// actOnRole carries out a policy raised by a role-level event.
func (p *planner) actOnRole(pol policy.Policy, role *musterv1.Role, why string, ts *musterv1.TaskStatus) {
	switch pol.Action {
	case policy.ActionRestartRole:
		p.roleRestarts[role.Name] = why
	case policy.ActionRestartJob:
		p.restartJob(why, true)
	case policy.ActionSuspendJob:
		p.suspendByPolicy(why)
	default:
		p.endByPolicy(pol.Action, why, role.Name, ts)
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

// checkPending applies a PodPending policy to a pod that has not started
// within the policy's timeout.
func (p *planner) checkPending(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod) {
	pol, ok := policy.Match(p.policies, policy.Observed{Event: policy.EventPodPending, Role: role.Name})
	if !ok || pol.TimeoutSeconds == nil || p.outcome != nil || p.restart != nil {
		return
	}
	due := pod.CreationTimestamp.Add(time.Duration(*pol.TimeoutSeconds) * time.Second)
	if left := due.Sub(p.now.Time); left > 0 {
		p.requeue(left)
		return
	}
	ts.LastExit = &musterv1.ExitStatus{
		PodUID: pod.UID, Reason: musterv1.ReasonPodPendingTimeout, FinishedAt: new(p.now),
		Message: fmt.Sprintf("the pod did not start within %ds", *pol.TimeoutSeconds),
	}
	p.act(pol, role, ts, pod, true)
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
				Message: why + ", but the job has used all the restarts of spec.run.backoffLimit"})
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
				t.LastExit = &musterv1.ExitStatus{PodUID: pod.UID, Reason: "RoleRestarted", Message: why, FinishedAt: new(p.now)}
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

// gangEvents raises Unknown when the job runs partly placed: some tasks
// run while the pods of others cannot be scheduled. A gang scheduler
// prevents that state; without one, a policy can react to it.
func (p *planner) gangEvents(roles []musterv1.RoleStatus) {
	if p.outcome != nil || p.restart != nil || !p.partlyPlaced(roles) {
		return
	}
	pol, ok := policy.Match(p.policies, policy.Observed{Event: policy.EventUnknown})
	if !ok {
		return
	}
	why := "the job is partly placed: some tasks run while others cannot be scheduled, and a policy on Unknown has action " + string(pol.Action)
	switch pol.Action {
	case policy.ActionRestartJob:
		p.restartJob(why, true)
	case policy.ActionSuspendJob:
		p.suspendByPolicy(why)
	default:
		p.endByPolicy(pol.Action, why, "", nil)
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
