package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// The three scopes of a restart: one task's pod, every task of a role, the
// whole job. Each is charged to the job's one budget (failure.Budget) when
// it is accountable; a job out of budget fails for good instead.

// restartTask replaces one task's pod, if the task and the job have
// restarts left.
func (a *applier) restartTask(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod, accountable bool) {
	exit := *ts.LastExit
	switch charge := a.c.policy.Budget.Charge(accountable, a.st.Restarts.Accountable, ts.AccountableRestarts); charge {
	case failure.TaskExhausted:
		settle(ts, false, a.out)
		a.out.event(true, musterv1.EventReasonTaskRetriesExhausted, ts.Pod+" used "+a.c.policy.Budget.Exhausted(charge))
		a.taskFailedRule(role, ts)
		return
	case failure.JobExhausted:
		ts.State = musterv1.TaskFailed
		a.jobDecision = a.jobDecision.failForGood(taskCompletion(musterv1.ReasonBackoffLimitExceeded,
			ts.Pod+" failed ("+failure.DescribeExit(exit)+") and the job has used "+a.c.policy.Budget.Exhausted(charge),
			role.Name, ts))
		return
	}
	ts.State = musterv1.TaskRestarting
	ts.Restarts++
	a.st.Restarts.Total++
	if accountable {
		ts.AccountableRestarts++
		a.st.Restarts.Accountable++
	}
	a.out.event(false, musterv1.EventReasonTaskRestarting, "restarting "+ts.Pod+a.restartHow(role, pod)+" after "+failure.DescribeExit(exit))
	if pod != nil {
		a.replaceEnded(role, ts, pod)
	} else {
		a.createPod(role, ts)
	}
}

// chargeNodeRestarts charges, at an end of a task's pod, the restarts its
// node made alone of the pod's training containers that no plan has
// charged (observe.NodeRestarts against the task's nodeRestarts): a
// container's restart rule restarts it at once on an exit that is not
// final, and again after each back-off, with or without the operator, and
// the pod keeps only the last exit. Each is a restart of the task, charged
// as the operator's own are, once: the task keeps the count charged. The
// end itself, when it is one of them (a failure restarted alone:
// taskStep.failedInPlace), is left to the decision on it, which charges
// it as any end; whatever that decision does then meets a budget these
// have already drawn on. The exits before the last are gone, so they are
// taken to be of the last one's kind: accountable unless that one is not.
func (a *applier) chargeNodeRestarts(ts *musterv1.TaskStatus, s taskStep) {
	if s.pod == nil {
		return
	}
	n, known := observe.NodeRestarts(s.pod)
	if !known {
		return
	}
	extra := n - ts.NodeRestarts
	if s.failedInPlace {
		extra--
	}
	ts.NodeRestarts = n
	if extra <= 0 {
		return
	}
	accountable := !s.failedInPlace || s.decision.Accountable
	ts.Restarts += extra
	a.st.Restarts.Total += extra
	if accountable {
		ts.AccountableRestarts += extra
		a.st.Restarts.Accountable += extra
	}
	a.out.event(false, musterv1.EventReasonTaskRestarting, fmt.Sprintf(
		"%s: its node restarted a failed training container alone %d more times than the operator saw; each is charged as a restart", ts.Pod, extra))
}

// replaceEnded deletes the ended instance of a task being restarted and,
// when that deletion removes it from the API at once (a finished pod is
// deleted without grace, after the same plan releases it), asks for its
// replacement in the same plan: the actions delete before they create.
//
// A pod that can restart in place is asked to, and kept.
func (a *applier) replaceEnded(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod) {
	if a.restartInPlace(role, ts, pod, "restart") {
		return
	}
	a.out.deletePod(pod, "restart")
	if pod.DeletionTimestamp == nil && podFinished(pod) && observe.GoneOnForcedDelete(pod) {
		a.createPod(role, ts)
	}
}

// restartJob asks for a new attempt of the whole job: a gang restart. It
// needs restarts left in spec.failurePolicy.backoffLimit when it counts.
func (a *applier) restartJob(message string, accountable bool) {
	if a.jobDecision.decided() {
		return
	}
	if charge := a.c.policy.Budget.Charge(accountable, a.st.Restarts.Accountable, -1); charge != failure.Allowed {
		a.jobDecision = a.jobDecision.failForGood(musterv1.CompletionStatus{
			Reason:  musterv1.ReasonBackoffLimitExceeded,
			Message: message + ", but the job has used " + a.c.policy.Budget.Exhausted(charge),
		})
		return
	}
	a.jobDecision.restart = &jobRestart{message: message, accountable: accountable}
}

// applyRoleRestarts restarts every task of the roles a rule restarted:
// one restart for the role, and each task's pod replaced.
func (a *applier) applyRoleRestarts() {
	for i := range a.st.Roles {
		rs := &a.st.Roles[i]
		why, ok := a.roleRestarts[rs.Name]
		if !ok || a.jobDecision.decided() {
			continue
		}
		if charge := a.c.policy.Budget.Charge(true, a.st.Restarts.Accountable, -1); charge != failure.Allowed {
			a.jobDecision = a.jobDecision.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonBackoffLimitExceeded, Role: rs.Name,
				Message: why + ", but the job has used " + a.c.policy.Budget.Exhausted(charge)})
			return
		}
		a.st.Restarts.Total++
		a.st.Restarts.Accountable++
		a.out.event(false, musterv1.EventReasonTaskRestarting, "restarting role "+rs.Name+": "+why)
		for j := range rs.Tasks {
			t := &rs.Tasks[j]
			if !counted(*t) {
				continue
			}
			t.State = musterv1.TaskRestarting
			t.Restarts++
			pod := a.c.pods.Tasks[t.Pod]
			if pod == nil {
				continue
			}
			if !isEnded(t, pod) {
				// Record which instance goes, so a crash before the delete
				// still deletes it on the next reconcile.
				t.LastExit = &musterv1.ExitStatus{PodUID: pod.UID, Reason: musterv1.ExitReasonRoleRestarted, Message: why, FinishedAt: new(a.c.now)}
			}
			if !a.restartInPlace(topology.Find(a.c.job, rs.Name), t, pod, "role restart") {
				a.out.deletePod(pod, "role restart")
			}
		}
		a.out.dropCreates(rs.Name)
	}
}

// restartInPlace asks a task's pod to restart in place into the task's
// next instance, if its role restarts in place and the pod can; it says
// whether it did.
func (a *applier) restartInPlace(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod, reason string) bool {
	if ok, _ := a.c.restartsInPlace(role, pod); !ok {
		return false
	}
	a.out.restartInPlace(pod, a.st.Attempt, nextInstance(ts, pod), reason)
	return true
}

// restartHow says, for the restart's event, how a task's pod restarts:
// in place, or re-created when its role restarts in place but the pod
// cannot (with why); nothing for a role that re-creates its pods.
func (a *applier) restartHow(role *musterv1.Role, pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	switch ok, whyNot := a.c.restartsInPlace(role, pod); {
	case ok:
		return " in place"
	case whyNot != "":
		return " by re-creating its pod (" + whyNot + ")"
	}
	return ""
}
