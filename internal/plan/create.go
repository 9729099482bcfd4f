package plan

import (
	"fmt"
	"time"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
)

// CreateFailure is a create the API server refused, as the controller saw it
// when it acted on the previous plan. Nothing in the cluster records it, so
// the controller hands it to the next plan, which decides what it means.
type CreateFailure struct {
	// Object is the pod's or the Service's name.
	Object string
	// NameTaken: an object Muster does not own already has the name.
	NameTaken bool
	// Err is the API server's answer.
	Err error
	// TensorBoard: the object is part of the job's TensorBoard, whose
	// failures block only the TensorBoard.
	TensorBoard bool
}

// createRetry is how soon a create that cannot succeed as things are (a
// name taken, a request refused) is tried again.
const createRetry = 10 * time.Second

// createFailures decides what refused creates mean. One that would fail the
// same way every time (the pod is invalid or too large) ends the job, as
// FrameworkController's PodCreationPermanentError does. One that something
// else stands in the way of (a foreign object with the name, a policy
// refusing the pod) stops the job from running, which its Running
// condition and an event say, and is tried again. Neither loops silently.
func createFailures(failures []CreateFailure, out *Result) (jobDecision, []blocked) {
	var v jobDecision
	var held []blocked
	if len(failures) == 0 {
		return v, nil
	}
	for _, f := range failures {
		if f.TensorBoard {
			continue
		}
		if f.NameTaken {
			held = append(held, blocked{musterv1.ReasonNameTaken,
				fmt.Sprintf("%s cannot be created: an object Muster does not own has its name", f.Object)})
			continue
		}
		c := failure.CreationErrorOf(f.Err)
		if c.Has(failure.AttributePermanent) {
			v = v.failForGood(musterv1.CompletionStatus{
				Reason: musterv1.ReasonPodCreateFailed, Message: fmt.Sprintf("creating %s: %v", f.Object, f.Err),
				Code: new(c.Code), Phrase: c.Phrase, Attributes: []string{string(failure.AttributePermanent)},
			})
			return v, held
		}
		if !c.Has(failure.AttributeTransient) {
			held = append(held, blocked{musterv1.ReasonPodCreateFailed, fmt.Sprintf("creating %s: %v", f.Object, f.Err)})
		}
	}
	if len(held) > 0 {
		out.event(true, musterv1.EventReason(held[0].reason), held[0].message)
		out.RequeueWithin(createRetry)
	}
	return v, held
}

// blocked is why the job cannot make an object it needs.
type blocked struct {
	reason  musterv1.ConditionReason
	message string
}
