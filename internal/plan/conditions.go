package plan

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/text"
)

func isFinished(s *musterv1.TrainingJobStatus) bool {
	return s.IsTrue(musterv1.ConditionSucceeded) || s.IsTrue(musterv1.ConditionFailed)
}

// maxMessageLen bounds a condition's message: the job's conditions are
// read at a glance, and the whole story is in events and the attempts.
const maxMessageLen = failure.MaxMessageLen

// setCondition sets a condition of st as of this plan's job generation and
// clock.
func (c *planContext) setCondition(st *musterv1.TrainingJobStatus, t musterv1.ConditionType, status bool, reason musterv1.ConditionReason, msg string) {
	cond := metav1.Condition{
		Type:               string(t),
		Status:             metav1.ConditionFalse,
		Reason:             string(reason),
		Message:            text.Head(msg, maxMessageLen),
		ObservedGeneration: c.job.Generation,
		LastTransitionTime: c.now,
	}
	if status {
		cond.Status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&st.Conditions, cond)
}
