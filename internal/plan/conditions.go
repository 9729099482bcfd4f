package plan

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

func isFinished(s *musterv1.TrainingJobStatus) bool {
	return s.IsTrue(musterv1.ConditionSucceeded) || s.IsTrue(musterv1.ConditionFailed)
}

// setCondition sets a condition of st as of this plan's job generation and
// clock.
func (c *planContext) setCondition(st *musterv1.TrainingJobStatus, t musterv1.ConditionType, status bool, reason, msg string) {
	cond := metav1.Condition{
		Type:               string(t),
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            truncate(msg),
		ObservedGeneration: c.job.Generation,
		LastTransitionTime: c.now,
	}
	if status {
		cond.Status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&st.Conditions, cond)
}
