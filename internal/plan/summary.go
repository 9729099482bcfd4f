package plan

import (
	"fmt"
	"strings"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// summarize derives the counts, the phase and the Running and Restarting
// conditions from the task states, so they never disagree with them.
func (p *planner) summarize() {
	wasRunning := p.status.Phase == musterv1.PhaseRunning
	desired, running, restarting, waiting, growing := p.countTasks()
	p.status.Ready = fmt.Sprintf("%d/%d", running, desired)

	switch {
	case p.status.IsTrue(musterv1.ConditionSucceeded):
		p.status.Phase = musterv1.PhaseSucceeded
	case p.status.IsTrue(musterv1.ConditionFailed):
		p.status.Phase = musterv1.PhaseFailed
	case p.status.IsTrue(musterv1.ConditionSuspended):
		p.status.Phase = musterv1.PhaseSuspended
	case restarting > 0:
		p.status.Phase = musterv1.PhaseRestarting
	case wasRunning && running > 0 && waiting == growing && waiting > 0:
		// The only tasks not running yet are new ones of the scalable
		// roles: a running job that is growing is still running.
		p.status.Phase = musterv1.PhaseRunning
		p.scaling = growing
	case waiting == 0 && running > 0:
		p.status.Phase = musterv1.PhaseRunning
	default:
		p.status.Phase = musterv1.PhasePending
	}
	p.setRunning(running, desired)
	if restarting > 0 || apiCondition(p.status, musterv1.ConditionRestarting) != nil {
		p.setCondition(musterv1.ConditionRestarting, restarting > 0, musterv1.ReasonTaskRestarting,
			fmt.Sprintf("%d tasks are being replaced", restarting))
	}
}

func (p *planner) setRunning(running, desired int32) {
	msg := fmt.Sprintf("%d of %d tasks running", running, desired)
	switch p.status.Phase {
	case musterv1.PhaseRunning:
		if p.scaling > 0 {
			p.setCondition(musterv1.ConditionRunning, true, musterv1.ReasonScaling,
				fmt.Sprintf("%s; scaling: %d new tasks starting", msg, p.scaling))
			return
		}
		p.setCondition(musterv1.ConditionRunning, true, musterv1.ReasonPodsRunning, msg)
	case musterv1.PhaseSucceeded, musterv1.PhaseFailed:
		if apiCondition(p.status, musterv1.ConditionRunning) != nil {
			p.setCondition(musterv1.ConditionRunning, false, p.status.Completion.Reason, "the job has finished")
		}
	case musterv1.PhaseSuspended:
		if apiCondition(p.status, musterv1.ConditionRunning) != nil {
			p.setCondition(musterv1.ConditionRunning, false, musterv1.ReasonSuspended, "the job is suspended")
		}
	case musterv1.PhaseRestarting:
		if apiCondition(p.status, musterv1.ConditionRunning) != nil {
			p.setCondition(musterv1.ConditionRunning, false, musterv1.ReasonTaskRestarting, msg)
		}
	default:
		if len(p.blocked) > 0 {
			p.setCondition(musterv1.ConditionRunning, false, p.blocked[0].reason, p.blocked[0].message)
			return
		}
		if p.waitingForStore {
			p.waiting = append(p.waiting, "the elastic world waits for the rendezvous store "+objects.StorePodName(p.job)+" to run")
		}
		if len(p.waiting) > 0 {
			p.setCondition(musterv1.ConditionRunning, false, musterv1.ReasonWaitingForRoles, strings.Join(p.waiting, "; "))
			return
		}
		p.setCondition(musterv1.ConditionRunning, false, musterv1.ReasonPodsPending, msg)
	}
}

// countTasks fills each role's counts from its task states, and returns
// the job's: tasks desired, running, being restarted, waiting for a pod, and
// of those waiting, the new ones of scalable roles.
func (p *planner) countTasks() (desired, running, restarting, waiting, growing int32) {
	for i := range p.status.Roles {
		rs := &p.status.Roles[i]
		scalable := topology.ScalingOf(p.job, rs.Name) != nil
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
