package v1alpha1

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition is the job's condition of type t, or nil.
func (s *TrainingJobStatus) Condition(t ConditionType) *metav1.Condition {
	return apimeta.FindStatusCondition(s.Conditions, string(t))
}

// IsTrue is whether the job's condition of type t is true.
func (s *TrainingJobStatus) IsTrue(t ConditionType) bool {
	return apimeta.IsStatusConditionTrue(s.Conditions, string(t))
}

// Finished is whether the job has succeeded or failed.
func (s *TrainingJobStatus) Finished() bool {
	return s.IsTrue(ConditionSucceeded) || s.IsTrue(ConditionFailed)
}
