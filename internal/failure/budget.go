package failure

import (
	"strconv"

	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Budget is the job's restart budget: spec.failurePolicy.backoffLimit
// counted restarts over every task and every scope (a pod, a role and a
// whole-job restart each count one), and backoffLimitPerTask for each
// task's own.
type Budget struct {
	Limit   int32
	PerTask *int32
}

// BudgetOf is job's restart budget.
func BudgetOf(job *musterv1.TrainingJob) Budget {
	fp := job.Spec.FailurePolicy
	return Budget{Limit: ptr.Deref(fp.BackoffLimit, musterv1.DefaultBackoffLimit), PerTask: fp.BackoffLimitPerTask}
}

// Charge is whether a restart may be made now, given the accountable
// restarts the job and the task have made (task: -1 for a restart of a
// role or the whole job). A restart that does not count is always allowed.
type Charge int

const (
	// Allowed: the restart is made, and counted if accountable.
	Allowed Charge = iota
	// TaskExhausted: the task has used backoffLimitPerTask; it fails for
	// good, which may raise TaskFailed.
	TaskExhausted
	// JobExhausted: the job has used backoffLimit; it fails for good.
	JobExhausted
)

// Charge decides whether an accountable restart fits the budget; the task's
// own limit is checked first, so that a task out of restarts fails alone.
func (b Budget) Charge(accountable bool, job, task int32) Charge {
	switch {
	case !accountable:
		return Allowed
	case task >= 0 && b.PerTask != nil && task >= *b.PerTask:
		return TaskExhausted
	case job >= b.Limit:
		return JobExhausted
	}
	return Allowed
}

// Exhausted says which limit a refused restart hit, for messages.
func (b Budget) Exhausted(c Charge) string {
	if c == TaskExhausted {
		return "all " + strconv.Itoa(int(ptr.Deref(b.PerTask, 0))) + " restarts of spec.failurePolicy.backoffLimitPerTask"
	}
	return "all " + strconv.Itoa(int(b.Limit)) + " restarts of spec.failurePolicy.backoffLimit"
}
