package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// unmetDependency returns the first of role's dependencies that the roles
// synced so far do not meet, as text for the status, or "".
func unmetDependency(role *musterv1.Role, done []musterv1.RoleStatus) string {
	for _, d := range role.DependsOn {
		when := d.When
		if when == "" {
			when = musterv1.DependencyRunning
		}
		var dep *musterv1.RoleStatus
		for i := range done {
			if done[i].Name == d.Role {
				dep = &done[i]
			}
		}
		if dep == nil || !dependencyMet(dep, when) {
			return "role " + d.Role + " to be " + string(when)
		}
	}
	return ""
}

// dependencyMet: Running means every task runs or has succeeded; Succeeded
// means every task has succeeded. A role with no tasks meets both.
func dependencyMet(rs *musterv1.RoleStatus, when musterv1.DependencyCondition) bool {
	for _, t := range rs.Tasks {
		switch {
		case !counted(t), t.State == musterv1.TaskSucceeded:
		case t.State == musterv1.TaskRunning && when == musterv1.DependencyRunning:
		default:
			return false
		}
	}
	return true
}
