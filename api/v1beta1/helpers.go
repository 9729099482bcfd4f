package v1beta1

import (
	"slices"

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

// ShapeRestartScope is the restart scope a role's shape calls for, the
// one v1alpha1 implied where v1beta1 asks for it: Task in an elastic role
// (its world survives a lost member); else Job where the tasks learn their
// peers once (a runtime other than volcanoJob) or a gang is scheduled (a
// lone replacement would not be placed as part of it); else Task. The
// conversion from v1alpha1, muster import and the test builders all choose
// by it.
func ShapeRestartScope(elasticRole, peersOnce, gang bool) RestartScope {
	if !elasticRole && (peersOnce || gang) {
		return RestartScopeJob
	}
	return RestartScopeTask
}

// ShapeRestartScope is the restart scope role's shape calls for in this
// spec (the package function of that name), with the gang backend the spec
// names.
func (s *TrainingJobSpec) ShapeRestartScope(role string) RestartScope {
	rt := s.Runtime
	elastic := rt != nil && rt.PyTorch != nil && rt.PyTorch.Elastic != nil &&
		slices.ContainsFunc(s.Scaling.Roles, func(r ScalingRole) bool { return r.Name == role })
	gang := s.Scheduling.Backend != "" && s.Scheduling.Backend != GangNone
	return ShapeRestartScope(elastic, rt != nil && rt.VolcanoJob == nil, gang)
}
