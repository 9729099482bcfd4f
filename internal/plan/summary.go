package plan

import (
	"fmt"
	"slices"
	"strings"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// summarizePhase derives the counts, the phase and the Running and Restarting
// conditions from the task states, so they never disagree with them. held
// is why a job that runs is not running yet.
func summarizePhase(c *planContext, st *musterv1.TrainingJobStatus, held holdUps) {
	wasRunning := st.Phase == musterv1.PhaseRunning
	desired, running, restarting, waiting, growing := countTasks(c.job, st)
	st.Ready = fmt.Sprintf("%d/%d", running, desired)
	var scaling int32

	switch {
	case st.IsTrue(musterv1.ConditionSucceeded):
		st.Phase = musterv1.PhaseSucceeded
	case st.IsTrue(musterv1.ConditionFailed):
		st.Phase = musterv1.PhaseFailed
	case st.IsTrue(musterv1.ConditionSuspended):
		st.Phase = musterv1.PhaseSuspended
	case restarting > 0:
		st.Phase = musterv1.PhaseRestarting
	case wasRunning && running > 0 && waiting == growing && waiting > 0:
		// The only tasks not running yet are new ones of the scalable
		// roles: a running job that is growing is still running.
		st.Phase = musterv1.PhaseRunning
		scaling = growing
	case waiting == 0 && running > 0:
		st.Phase = musterv1.PhaseRunning
	default:
		st.Phase = musterv1.PhasePending
	}
	setRunning(c, st, running, desired, scaling, held)
	if restarting > 0 || st.Condition(musterv1.ConditionRestarting) != nil {
		c.setCondition(st, musterv1.ConditionRestarting, restarting > 0, musterv1.ReasonTaskRestarting,
			fmt.Sprintf("%d tasks are being replaced", restarting))
	}
}

// setRunning sets the Running condition for the phase: scaling is how many
// new tasks a growing running job is starting.
func setRunning(c *planContext, st *musterv1.TrainingJobStatus, running, desired, scaling int32, held holdUps) {
	msg := fmt.Sprintf("%d of %d tasks running", running, desired)
	switch st.Phase {
	case musterv1.PhaseRunning:
		if scaling > 0 {
			c.setCondition(st, musterv1.ConditionRunning, true, musterv1.ReasonScaling,
				fmt.Sprintf("%s; scaling: %d new tasks starting", msg, scaling))
			return
		}
		c.setCondition(st, musterv1.ConditionRunning, true, musterv1.ReasonPodsRunning, msg)
	case musterv1.PhaseSucceeded, musterv1.PhaseFailed:
		if st.Condition(musterv1.ConditionRunning) != nil {
			c.setCondition(st, musterv1.ConditionRunning, false, st.Completion.Reason, "the job has finished")
		}
	case musterv1.PhaseSuspended:
		if st.Condition(musterv1.ConditionRunning) != nil {
			c.setCondition(st, musterv1.ConditionRunning, false, musterv1.ReasonSuspended, "the job is suspended")
		}
	case musterv1.PhaseRestarting:
		if st.Condition(musterv1.ConditionRunning) != nil {
			c.setCondition(st, musterv1.ConditionRunning, false, musterv1.ReasonTaskRestarting, msg)
		}
	default:
		if len(held.blocked) > 0 {
			c.setCondition(st, musterv1.ConditionRunning, false, held.blocked[0].reason, held.blocked[0].message)
			return
		}
		waiting := held.waiting
		if held.store {
			waiting = append(slices.Clip(waiting), "the elastic world waits for the rendezvous store "+objects.StorePodName(c.job)+" to run")
		}
		if len(waiting) > 0 {
			c.setCondition(st, musterv1.ConditionRunning, false, musterv1.ReasonWaitingForRoles, strings.Join(waiting, "; "))
			return
		}
		c.setCondition(st, musterv1.ConditionRunning, false, musterv1.ReasonPodsPending, msg)
	}
}

// countTasks fills each role's counts from its task states, and returns
// the job's: tasks desired, running, being restarted, waiting for a pod, and
// of those waiting, the new ones of scalable roles.
func countTasks(job *musterv1.TrainingJob, st *musterv1.TrainingJobStatus) (desired, running, restarting, waiting, growing int32) {
	for i := range st.Roles {
		rs := &st.Roles[i]
		scalable := topology.ScalingOf(job, rs.Name) != nil
		rs.Pending, rs.Running, rs.Succeeded, rs.Failed = 0, 0, 0, 0
		for _, t := range rs.Tasks {
			if !counted(t) {
				continue
			}
			switch t.State {
			case musterv1.TaskRunning:
				rs.Running++
			case musterv1.TaskSucceeded:
				rs.Succeeded++
			case musterv1.TaskFailed:
				rs.Failed++
			case musterv1.TaskRestarting:
				rs.Pending++
				restarting++
			case musterv1.TaskCreating, musterv1.TaskPending:
				rs.Pending++
				waiting++
				if scalable {
					growing++
				}
			}
		}
		desired += rs.Replicas
		running += rs.Running
	}
	return desired, running, restarting, waiting, growing
}
