package v1beta1

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

// Task is the state of the role's task index, from the entry that
// describes it, or false when no entry does.
func (r *RoleStatus) Task(index int32) (TaskStatus, bool) {
	for _, t := range r.Tasks {
		if index >= t.Index && index < t.Index+max(t.Count, 1) {
			out := *t.DeepCopy()
			out.Index, out.Count = index, 0
			return out, true
		}
	}
	return TaskStatus{}, false
}

// TaskCount is the number of tasks the role's entries describe.
func (r *RoleStatus) TaskCount() int32 {
	var n int32
	for _, t := range r.Tasks {
		n += max(t.Count, 1)
	}
	return n
}

// Hub marks v1beta1 as the version every other converts to and from.
func (*TrainingJob) Hub() {}
