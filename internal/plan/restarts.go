package plan

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// The three scopes of a restart: one task's pod, every task of a role, the
// whole job. Each counts against the job's one budget,
// spec.failurePolicy.backoffLimit, when it is accountable; a job out of
// budget fails for good instead.

func backoffLimit(job *musterv1.TrainingJob) int32 {
	return ptr.Deref(job.Spec.FailurePolicy.BackoffLimit, musterv1.DefaultBackoffLimit)
}

// budgetSpent is whether an accountable restart is still allowed.
func budgetSpent(job *musterv1.TrainingJob, st *musterv1.TrainingJobStatus) bool {
	return st.Restarts.Accountable >= backoffLimit(job)
}

// restartTask replaces one task's pod, if the task and the job have
// restarts left.
func (a *applier) restartTask(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod, accountable bool) {
	exit := *ts.LastExit
	if perTask := a.c.job.Spec.FailurePolicy.BackoffLimitPerTask; accountable && perTask != nil && ts.AccountableRestarts >= *perTask {
		settle(ts, false, a.out)
		a.out.event(true, musterv1.ReasonTaskRetriesExhausted, ts.Pod+" used all "+strconv.Itoa(int(*perTask))+" restarts of spec.failurePolicy.backoffLimitPerTask")
		a.taskFailedRule(role, ts)
		return
	}
	if accountable && budgetSpent(a.c.job, a.st) {
		ts.State = musterv1.TaskFailed
		a.verdict = a.verdict.failForGood(taskCompletion(musterv1.ReasonBackoffLimitExceeded,
			ts.Pod+" failed ("+describeExit(exit)+") and the job has used all "+
				strconv.Itoa(int(backoffLimit(a.c.job)))+" restarts of spec.failurePolicy.backoffLimit",
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
	a.out.event(false, musterv1.ReasonTaskRestarting, "restarting "+ts.Pod+" after "+describeExit(exit))
	if pod != nil {
		a.replaceEnded(role, ts, pod)
	} else {
		a.createPod(role, ts)
	}
}

// replaceEnded deletes the ended instance of a task being restarted and,
// when that deletion removes it from the API at once (a finished pod is
// deleted without grace, after the same plan releases it), asks for its
// replacement in the same plan: the actions delete before they create.
func (a *applier) replaceEnded(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod) {
	a.out.deletePod(pod, "restart")
	if pod.DeletionTimestamp == nil && podFinished(pod) && observe.GoneOnForcedDelete(pod) {
		a.createPod(role, ts)
	}
}

// restartJob asks for a new attempt of the whole job: a gang restart. It
// needs restarts left in spec.failurePolicy.backoffLimit when it counts.
func (a *applier) restartJob(message string, accountable bool) {
	if a.verdict.decided() {
		return
	}
	if accountable && budgetSpent(a.c.job, a.st) {
		a.verdict = a.verdict.failForGood(musterv1.CompletionStatus{
			Reason:  musterv1.ReasonBackoffLimitExceeded,
			Message: message + ", but the job has used all the restarts of spec.failurePolicy.backoffLimit",
		})
		return
	}
	a.verdict.restart = &jobRestart{message: message, accountable: accountable}
}

// applyRoleRestarts restarts every task of the roles a rule restarted:
// one restart for the role, and each task's pod replaced.
func (a *applier) applyRoleRestarts() {
	for i := range a.st.Roles {
		rs := &a.st.Roles[i]
		why, ok := a.roleRestarts[rs.Name]
		if !ok || a.verdict.decided() {
			continue
		}
		if budgetSpent(a.c.job, a.st) {
			a.verdict = a.verdict.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonBackoffLimitExceeded, Role: rs.Name,
				Message: why + ", but the job has used all the restarts of spec.failurePolicy.backoffLimit"})
			return
		}
		a.st.Restarts.Total++
		a.st.Restarts.Accountable++
		a.out.event(false, musterv1.ReasonTaskRestarting, "restarting role "+rs.Name+": "+why)
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
			if !isEnded(t, pod.UID) {
				// Record which instance goes, so a crash before the delete
				// still deletes it on the next reconcile.
				t.LastExit = &musterv1.ExitStatus{PodUID: pod.UID, Reason: musterv1.ReasonRoleRestarted, Message: why, FinishedAt: new(a.c.now)}
			}
			a.out.deletePod(pod, "role restart")
		}
		a.out.dropCreates(rs.Name)
	}
}
