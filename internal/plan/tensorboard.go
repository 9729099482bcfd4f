package plan

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// TensorBoard is the job's TensorBoard as the controller observed it: only
// objects the job controls count.
type TensorBoard struct {
	// Deployment and Service: whether the job's own exist.
	Deployment, Service bool
	// Current: the Deployment was built from spec.tensorboard as it is now.
	Current bool
	// Ready: the Deployment has a ready pod.
	Ready bool
}

// TensorBoardAction is what to do with the job's TensorBoard objects.
type TensorBoardAction string

// TensorBoard actions.
const (
	// TensorBoardEnsure creates the Deployment and Service that
	// objects.DesiredTensorBoard builds, or brings a stale Deployment up
	// to date.
	TensorBoardEnsure TensorBoardAction = "Ensure"
	// TensorBoardRemove deletes the job's TensorBoard objects.
	TensorBoardRemove TensorBoardAction = "Remove"
)

// tensorBoardStep decides the job's TensorBoard, whatever the job's phase:
// it lives from the job's creation until the job is deleted or
// spec.tensorboard.ttlSecondsAfterFinished has passed after the end. A
// refused create makes it Blocked, never the job: the training does not
// depend on it.
func tensorBoardStep(c *planContext, st *musterv1.TrainingJobStatus, seen TensorBoard, failures []CreateFailure, out *Result) {
	tb := &c.job.Spec.TensorBoard
	exists := seen.Deployment || seen.Service
	if !tb.Enabled() {
		st.TensorBoard = musterv1.TensorBoardStatus{}
		apimeta.RemoveStatusCondition(&st.Conditions, string(musterv1.ConditionTensorBoardReady))
		if exists {
			out.TensorBoard = TensorBoardRemove
		}
		return
	}
	if left, ok := tensorBoardTTL(tb, st, c.now.Time); ok {
		if left > 0 {
			out.RequeueWithin(left)
		} else {
			st.TensorBoard = musterv1.TensorBoardStatus{}
			c.setCondition(st, musterv1.ConditionTensorBoardReady, false, musterv1.ReasonTTLExpired,
				fmt.Sprintf("removed %ds after the job finished (spec.tensorboard.ttlSecondsAfterFinished)", *tb.TTLSecondsAfterFinished))
			if exists {
				out.TensorBoard = TensorBoardRemove
			}
			return
		}
	}
	if _, _, ok := objects.DesiredTensorBoard(c.job); !ok {
		// Admission refuses this; a job that slipped past it keeps training.
		st.TensorBoard = musterv1.TensorBoardStatus{}
		c.setCondition(st, musterv1.ConditionTensorBoardReady, false, musterv1.ReasonInvalidSpec,
			fmt.Sprintf("spec.tensorboard.logs.volume %q names no volume of the job's pod templates", tb.Logs.Volume))
		return
	}
	st.TensorBoard = musterv1.TensorBoardStatus{Address: objects.TensorBoardAddress(c.job)}
	if !seen.Deployment || !seen.Service || !seen.Current {
		out.TensorBoard = TensorBoardEnsure
	}
	if f, ok := tensorBoardFailure(failures); ok {
		reason, msg := musterv1.ReasonTensorBoardFailed, fmt.Sprintf("creating %s: %v", f.Object, f.Err)
		if f.NameTaken {
			reason, msg = musterv1.ReasonNameTaken, fmt.Sprintf("%s cannot be created: an object Muster does not own has its name", f.Object)
		}
		c.setCondition(st, musterv1.ConditionTensorBoardReady, false, reason, msg)
		out.event(true, musterv1.EventReason(reason), msg)
		out.RequeueWithin(createRetry)
		return
	}
	switch {
	case seen.Ready && seen.Service:
		c.setCondition(st, musterv1.ConditionTensorBoardReady, true, musterv1.ReasonReady, "serving at "+st.TensorBoard.Address)
	case !exists && blockedTensorBoard(st):
		// Retrying a create that was refused: it stays Blocked until the
		// objects are there, so the condition does not flap.
		out.RequeueWithin(createRetry)
	default:
		c.setCondition(st, musterv1.ConditionTensorBoardReady, false, musterv1.ReasonStarting, "waiting for the TensorBoard pod to be ready")
	}
}

// tensorBoardTTL is how long the finished job's TensorBoard has left, and
// whether it has a TTL running at all.
func tensorBoardTTL(tb *musterv1.TensorBoard, st *musterv1.TrainingJobStatus, now time.Time) (time.Duration, bool) {
	if tb.TTLSecondsAfterFinished == nil || st.CompletionTime == nil || !isFinished(st) {
		return 0, false
	}
	return st.CompletionTime.Add(time.Duration(*tb.TTLSecondsAfterFinished) * time.Second).Sub(now), true
}

// tensorBoardFailure is the first refused create of a TensorBoard object.
func tensorBoardFailure(failures []CreateFailure) (CreateFailure, bool) {
	for _, f := range failures {
		if f.TensorBoard {
			return f, true
		}
	}
	return CreateFailure{}, false
}

// blockedTensorBoard is whether the TensorBoard's last create was refused.
func blockedTensorBoard(st *musterv1.TrainingJobStatus) bool {
	cond := apimeta.FindStatusCondition(st.Conditions, string(musterv1.ConditionTensorBoardReady))
	return cond != nil && (cond.Reason == string(musterv1.ReasonNameTaken) || cond.Reason == string(musterv1.ReasonTensorBoardFailed))
}
