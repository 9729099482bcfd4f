package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// gates are what a task's new pod waits for besides its own state.
type gates struct {
	// delayed: a new attempt waits out a conflict delay.
	delayed bool
	// storeReady: the rendezvous store runs, so elastic tasks may start.
	storeReady bool
}

// applier carries out, task by task and in order, what the steps of the
// roles ask and what the decisions on them say. It is the state of one
// phase, syncRoles, and nothing outlives it: the phase returns the jobDecision
// the decisions reached. The order matters because each decision sees the
// ones before it: a task that ends after the job was failed in the same
// plan is only recorded, and restarts count against one budget.
type applier struct {
	c     *planContext
	st    *musterv1.TrainingJobStatus
	out   *Result
	gates gates
	// jobDecision is what happens next to the job, as decided so far.
	jobDecision jobDecision
	// roleRestarts are the roles a rule restarts, with why; they restart
	// once every task was synced.
	roleRestarts map[string]string
	// waitingForStore: a task's new pod waits for the rendezvous store.
	waitingForStore bool
}

// syncRoles syncs every role's tasks in spec order, each role seeing the
// roles synced before it (the only ones it may depend on): observe the
// tasks, classify and decide the ended ones, apply the decisions. Then the
// restarts of whole roles, and the PartlyPlaced and Stalled events.
func syncRoles(c *planContext, st *musterv1.TrainingJobStatus, v jobDecision, g gates, out *Result) (jobDecision, holdUps) {
	a := &applier{c: c, st: st, out: out, gates: g, jobDecision: v, roleRestarts: map[string]string{}}
	var held holdUps
	endsLeft := maxEndsPerPlan
	roles := make([]musterv1.RoleStatus, 0, len(c.job.Spec.Roles))
	for i := range c.job.Spec.Roles {
		role := &c.job.Spec.Roles[i]
		waitFor := unmetDependency(c.job, role, roles)
		if waitFor != "" {
			held.waiting = append(held.waiting, "role "+role.Name+" waits for "+waitFor)
		}
		var steps []taskStep
		steps, endsLeft = observeRole(c, role, roleStatus(st, role.Name), waitFor, endsLeft)
		rs := a.applyRole(role, steps)
		a.roleEvents(role, &rs)
		roles = append(roles, rs)
	}
	st.Roles = roles
	a.applyRoleRestarts()
	a.gangEvents(roles)
	a.stallEvents()
	held.store = a.waitingForStore
	return a.jobDecision, held
}

// applyRole applies the steps of one role's tasks.
func (a *applier) applyRole(role *musterv1.Role, steps []taskStep) musterv1.RoleStatus {
	replicas := topology.Replicas(role)
	rs := musterv1.RoleStatus{Name: role.Name, Replicas: replicas, Tasks: make([]musterv1.TaskStatus, 0, len(steps))}
	for _, s := range steps {
		ts := s.task
		a.apply(role, &ts, s)
		rs.Tasks = append(rs.Tasks, ts)
	}
	rs.Tasks = compact(rs.Tasks, replicas, a.c.pods.Tasks)
	return rs
}

// recreateInPlacePod deletes, uncharged, a task's pod that can no longer
// restart in place, and says why: its next pod is made as for any pod
// lost through no fault of the job's.
func (a *applier) recreateInPlacePod(ts *musterv1.TaskStatus, pod *corev1.Pod, why string) {
	a.out.event(true, musterv1.EventReasonTaskRestarting, "re-creating "+ts.Pod+": "+why)
	a.out.deletePod(pod, "cannot restart in place")
}

// apply moves one task along its state machine. See
// docs/state-machine.md.
func (a *applier) apply(role *musterv1.Role, ts *musterv1.TaskStatus, s taskStep) {
	// Why the pod waits is told while it waits, and only then.
	ts.Waiting = ""
	switch s.kind {
	case stepNone:
	case stepScaleDown:
		scaleDown(a.c, role, ts, s.pod, a.out)
	case stepCreate:
		a.createPod(role, ts)
	case stepTerminating:
		a.out.forceIfOverdue(s.pod, role, a.c.now.Time)
	case stepRemoveEnded:
		a.replaceEnded(role, ts, s.pod)
	case stepRestartingInPlace:
		ts.State = musterv1.TaskRestarting
		ts.Waiting = observe.Waiting(s.pod)
		// Back when the restart is overdue, if nothing else has come.
		a.out.RequeueWithin(s.left)
	case stepStopRerun:
		a.out.deletePod(s.pod, "failed for good")
	case stepInPlaceUnreadable:
		a.recreateInPlacePod(ts, s.pod, "its muster.dev/in-place-restarts annotation was changed, so its restarts can no longer be asked or counted")
	case stepInPlaceOverdue:
		a.recreateInPlacePod(ts, s.pod, "the restart in place it was asked has not begun within "+inPlaceRestartDeadline.String())
	case stepRunning:
		ts.State = musterv1.TaskRunning
		ts.Attempts = max(ts.Attempts, observe.TaskAttempt(s.pod))
	case stepPending:
		if ts.State != musterv1.TaskRestarting {
			ts.State = musterv1.TaskPending
		}
		ts.Waiting = observe.Waiting(s.pod)
		a.checkPending(role, ts, s.pod)
	case stepEndLater:
		a.out.RequeueWithin(time.Millisecond)
	case stepEnded:
		if s.pod != nil {
			ts.Attempts = max(ts.Attempts, observe.TaskAttempt(s.pod))
		}
		exit := s.end.Exit
		ts.LastExit = &exit
		a.out.Ended = append(a.out.Ended, endOf(ts, s.pod))
		a.chargeNodeRestarts(ts, s)
		if a.jobDecision.decided() {
			// The job is already ending or restarting in this plan.
			settle(ts, s.end.Succeeded, a.out)
			return
		}
		d := s.decision
		a.act(d.Action, failureCase{role: role, task: ts, pod: s.pod, accountable: d.Accountable, why: d.Why, reason: d.Reason})
	}
}

// endOf is the instance whose end a task's step counts: its pod, or the
// instance status knew of when the pod vanished.
func endOf(ts *musterv1.TaskStatus, pod *corev1.Pod) PodEnd {
	if pod == nil {
		return PodEnd{Name: ts.Pod, Attempt: ts.Attempts}
	}
	return PodEnd{Name: pod.Name, UID: pod.UID, Attempt: observe.TaskAttempt(pod)}
}

// settle makes a task's end final.
func settle(ts *musterv1.TaskStatus, succeeded bool, out *Result) {
	if succeeded {
		ts.State = musterv1.TaskSucceeded
		return
	}
	ts.State = musterv1.TaskFailed
	out.event(true, musterv1.EventReasonTaskFailed, ts.Pod+" failed: "+failure.DescribeExit(*ts.LastExit))
}

// createPod asks for the task's next pod, unless something it needs is not
// there yet.
func (a *applier) createPod(role *musterv1.Role, ts *musterv1.TaskStatus) {
	if a.jobDecision.outcome != nil || a.c.pods.Held(ts.Pod) || a.gates.delayed {
		// A finished job makes nothing; a name still held by a stray pod is
		// reused once that pod is gone.
		return
	}
	if waitsForStore(a.c.job, role, a.gates.storeReady) {
		a.waitingForStore = true
		return
	}
	pod, err := objects.DesiredPod(a.c.job, role, ts.Index, ts.Attempts+1)
	if err != nil {
		a.jobDecision = a.jobDecision.fail(musterv1.CompletionStatus{Reason: musterv1.ReasonPodCreateFailed, Message: err.Error(), Role: role.Name})
		return
	}
	if a.c.inPlaceFor(role) {
		objects.ApplyInPlace(pod, a.c.inPlaceOptions(role))
	}
	// A new pod's node has restarted nothing of it yet.
	ts.NodeRestarts = 0
	a.out.CreatePods = append(a.out.CreatePods, pod)
}
