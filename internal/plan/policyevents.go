package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// The failure rules' events other than a pod's end: each finds its rule
// and carries out the rule's action through the one action table.

// taskFailedRule raises TaskFailed for a task that failed for good.
func (a *applier) taskFailedRule(role *musterv1.Role, ts *musterv1.TaskStatus) {
	if i, ok := a.match(failure.Observed{Event: musterv1.EventTaskFailed, Role: role.Name}); ok {
		a.applyRule(i, failureCase{role: role, accountable: true, why: ts.Pod + " failed for good"})
	}
}

// roleEvents raises TaskCompleted when every task of a role has just
// succeeded.
func (a *applier) roleEvents(role *musterv1.Role, rs *musterv1.RoleStatus) {
	if rs.Replicas == 0 || !allSucceeded(rs) || allSucceeded(roleStatus(a.st, role.Name)) {
		return
	}
	if i, ok := a.match(failure.Observed{Event: musterv1.EventTaskCompleted, Role: role.Name}); ok {
		a.applyRule(i, failureCase{role: role, accountable: true, why: "every task of role " + role.Name + " succeeded"})
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
func (a *applier) checkPending(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod) {
	i, ok := a.match(failure.Observed{Event: musterv1.EventPodPending, Role: role.Name})
	if !ok {
		return
	}
	if observe.RestartedInPlace(pod) {
		// Placed long ago: it waits for its own containers, not a node.
		return
	}
	timeout := a.c.job.Spec.FailurePolicy.Rules[i].TimeoutSeconds
	due := pod.CreationTimestamp.Add(time.Duration(timeout) * time.Second)
	if left := due.Sub(a.c.now.Time); left > 0 {
		a.out.RequeueWithin(left)
		return
	}
	ts.LastExit = &musterv1.ExitStatus{
		PodUID: pod.UID, Reason: musterv1.ExitReasonPodPendingTimeout, FinishedAt: new(a.c.now),
		Message: fmt.Sprintf("the pod did not start within %ds", timeout),
	}
	a.applyRule(i, failureCase{role: role, task: ts, pod: pod, accountable: true,
		why: fmt.Sprintf("%s did not start within %ds", ts.Pod, timeout)})
}

// gangEvents raises PartlyPlaced when the job runs partly placed: some
// tasks run while the pods of others cannot be scheduled. A gang scheduler
// prevents that state; without one, a rule can react to it.
func (a *applier) gangEvents(roles []musterv1.RoleStatus) {
	if a.jobDecision.decided() || !partlyPlaced(roles, a.c.pods) {
		return
	}
	if i, ok := a.match(failure.Observed{Event: musterv1.EventPartlyPlaced}); ok {
		a.applyRule(i, failureCase{accountable: true, why: "the job is partly placed: some tasks run while others cannot be scheduled"})
	}
}

func partlyPlaced(roles []musterv1.RoleStatus, pods observe.Pods) bool {
	running, stuck := false, false
	for _, rs := range roles {
		for _, t := range rs.Tasks {
			if !counted(t) {
				continue
			}
			if t.State == musterv1.TaskRunning {
				running = true
			}
			if pod := pods.Tasks[t.Pod]; pod != nil && pod.Status.Phase == corev1.PodPending && observe.Unschedulable(pod) {
				stuck = true
			}
		}
	}
	return running && stuck
}

// suspendByPolicy suspends the job as a failure rule asked. The operator
// never writes the user's spec: the decision is the Suspended condition,
// tied to the spec's generation, and holds the job (no pods, as
// spec.run.suspend would) until the spec changes; `muster resume` makes
// such a change.
func suspendByPolicy(c *planContext, st *musterv1.TrainingJobStatus, why string, out *Result) {
	c.setCondition(st, musterv1.ConditionSuspended, true, musterv1.ReasonSuspendedByPolicy, "a lifecycle policy suspends the job: "+why)
	out.event(false, musterv1.EventReasonSuspendedByPolicy, "suspending the job: "+why)
}

// suspendedByPolicy is the message of a failure rule's suspension of this
// generation of the spec, and whether there is one.
func suspendedByPolicy(c *planContext, st *musterv1.TrainingJobStatus) (string, bool) {
	cond := st.Condition(musterv1.ConditionSuspended)
	if cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == string(musterv1.ReasonSuspendedByPolicy) &&
		cond.ObservedGeneration == c.job.Generation {
		return cond.Message, true
	}
	return "", false
}
