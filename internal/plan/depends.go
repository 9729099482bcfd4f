package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// unmetDependency returns the first of role's dependencies that the roles
// synced so far do not meet, as text for the status, or "".
func unmetDependency(job *musterv1.TrainingJob, role *musterv1.Role, done []musterv1.RoleStatus) string {
	for _, d := range append(runtimeDependencies(job, role), role.DependsOn...) {
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

// runtimeDependencies are the dependencies a runtime adds to a role: an MPI
// launcher waits for every worker role to run, because mpirun reaches the
// workers the moment it starts. The launcher is the last role, so the
// workers are synced before it, as a dependency requires.
func runtimeDependencies(job *musterv1.TrainingJob, role *musterv1.Role) []musterv1.Dependency {
	if !objects.IsMPILauncher(job, role.Name) {
		return nil
	}
	var out []musterv1.Dependency
	for _, w := range objects.MPIWorkerRoles(job) {
		out = append(out, musterv1.Dependency{Role: w, When: musterv1.DependencyRunning})
	}
	return out
}
