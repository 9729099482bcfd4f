package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/policy"
)

// hold keeps a job created with spec.run.execution Create: nothing is made
// for it, so the user can prepare what it will use before starting it.
func (p *planner) hold() {
	p.setCondition(musterv1.ConditionCreated, false, musterv1.ReasonHeld,
		"spec.run.execution is Create: nothing is created until it is Start")
}

// stop ends the job at once as Failed with reason Stopped. The object and
// its status stay; running pods go as spec.run.cleanPodPolicy says.
func (p *planner) stop() {
	p.outcome = &Outcome{NoRetry: true, Completion: musterv1.CompletionStatus{
		Reason:  musterv1.ReasonStopped,
		Message: "spec.run.execution is Stop: the job was stopped",
		Code:    new(int32(policy.CodeStopRequested)),
		Phrase:  "StopRequested",
	}}
	p.finish()
}
