package importer

import (
	"fmt"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// unlimited stands for a source's "no limit": the API's largest count.
const unlimited int32 = musterv1.MaxTasks

// fcRetry is a FrameworkController RetryPolicySpec.
type fcRetry struct {
	fancy bool
	max   int32
}

// convertFramework converts a FrameworkController Framework
// (frameworkcontroller.microsoft.com/v1). Framework is framework-agnostic,
// and so is the job: no runtime, one role per task role.
func convertFramework(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	s.drop(sp.child("description"), "Muster has no description field: keep it as an annotation")
	if e := s.str(sp.child("executionType")); e != "" {
		exec, err := fcExecution(e)
		if err != nil {
			return spec, fmt.Errorf("spec.executionType: %w", err)
		}
		spec.Run.Execution = exec
	}
	jobRetry, err := readFCRetry(s, sp.child("retryPolicy"))
	if err != nil {
		return spec, err
	}
	var tasks []fcTaskRetry
	for i := range s.list(sp.child("taskRoles")) {
		role, task, err := fcRole(s, sp.child("taskRoles", i))
		if err != nil {
			return spec, err
		}
		spec.Roles = append(spec.Roles, role)
		tasks = append(tasks, task)
	}
	if len(spec.Roles) == 0 {
		return spec, fmt.Errorf("spec.taskRoles: a Framework needs at least one task role")
	}
	fp, dropped := fcFailurePolicy(jobRetry, sp.child("retryPolicy"), tasks)
	spec.FailurePolicy = fp
	for _, d := range dropped {
		s.note(d.p, d.reason)
	}
	return spec, nil
}

func fcExecution(e string) (musterv1.Execution, error) {
	switch musterv1.Execution(e) {
	case musterv1.ExecutionCreate, musterv1.ExecutionStart, musterv1.ExecutionStop:
		return musterv1.Execution(e), nil
	}
	return "", fmt.Errorf("%q: Create, Start or Stop", e)
}

func readFCRetry(s *source, p path) (*fcRetry, error) {
	if !s.has(p) {
		return nil, nil
	}
	fancy, err := s.boolean(p.child("fancyRetryPolicy"))
	if err != nil {
		return nil, err
	}
	maxRetry, err := s.int32p(p.child("maxRetryCount"))
	if err != nil {
		return nil, err
	}
	s.seen(p)
	return &fcRetry{fancy: fancy, max: deref(maxRetry)}, nil
}

// fcTaskRetry is what a task role's retry means for the job-wide policy.
type fcTaskRetry struct {
	role  string
	p     path // the task's retryPolicy
	retry fcRetry
	// capped: the role's restarts are bounded by retry.max, which
	// becomes backoffLimitPerTask.
	capped bool
}

func fcRole(s *source, p path) (musterv1.Role, fcTaskRetry, error) {
	role := musterv1.Role{Name: s.str(p.child("name"))}
	n, err := s.replicas(p.child("taskNumber"))
	if err != nil {
		return role, fcTaskRetry{}, err
	}
	role.Replicas = ptr(deref(n))
	cp := p.child("frameworkAttemptCompletionPolicy")
	minFailed, err := s.int32p(cp.child("minFailedTaskCount"))
	if err != nil {
		return role, fcTaskRetry{}, err
	}
	minSucceeded, err := s.int32p(cp.child("minSucceededTaskCount"))
	if err != nil {
		return role, fcTaskRetry{}, err
	}
	s.seen(cp)
	role.Completion = fcCompletion(minFailed, minSucceeded)

	tp := p.child("task")
	retry, err := readFCRetry(s, tp.child("retryPolicy"))
	if err != nil {
		return role, fcTaskRetry{}, err
	}
	if retry == nil {
		retry = &fcRetry{}
	}
	podPolicy := s.str(tp.child("pod", "spec", "restartPolicy"))
	var capped bool
	role.RestartPolicy, capped = fcTaskRestart(podPolicy, *retry)
	if role.GracefulDeletionTimeoutSeconds, _, err = int64p(s, tp.child("podGracefulDeletionTimeoutSec")); err != nil {
		return role, fcTaskRetry{}, err
	}
	role.Template, err = fcTemplate(s, tp.child("pod"))
	if err != nil {
		return role, fcTaskRetry{}, err
	}
	return role, fcTaskRetry{role: role.Name, p: tp.child("retryPolicy"), retry: *retry, capped: capped}, nil
}

// fcCompletion is the role's completion rule. FrameworkController has no
// defaults: an absent count is 0, which disables the rule, as it does in
// Muster; so both are always written, or Muster's presets would apply.
func fcCompletion(minFailed, minSucceeded *int32) *musterv1.CompletionPolicy {
	clamp := func(v *int32) *int32 { return ptr(max(deref(v), -1)) }
	return &musterv1.CompletionPolicy{MinFailed: clamp(minFailed), MinSucceeded: clamp(minSucceeded)}
}

// fcTaskRestart is the role's restart policy. A pod the kubelet restarts
// in place (restartPolicy Always, the Kubernetes default, or OnFailure)
// never ends for FrameworkController; otherwise the task's retry policy
// decides. capped says whether maxRetryCount bounds the restarts.
func fcTaskRestart(podPolicy string, r fcRetry) (musterv1.RestartPolicy, bool) {
	switch podPolicy {
	case "", "Always":
		return musterv1.RestartPolicyAlways, false
	case "OnFailure":
		return musterv1.RestartPolicyOnFailure, false
	}
	switch {
	case r.max == -2:
		return musterv1.RestartPolicyAlways, false
	case r.max == -1:
		return musterv1.RestartPolicyOnFailure, false
	case r.max == 0 && !r.fancy:
		return musterv1.RestartPolicyNever, false
	default:
		// fancy with 0 retries still retries transient failures, which
		// Muster does not count against backoffLimitPerTask.
		return musterv1.RestartPolicyOnFailure, true
	}
}

type noted struct {
	p      path
	reason string
}

// fcFailurePolicy turns the Framework's (at jobPath) and the tasks' retry
// policies into the job's one failure policy. FrameworkController has no
// job-wide restart budget, so backoffLimit is the API's largest; its
// per-task budgets become backoffLimitPerTask, which Muster has once for
// the job; fancyRetryPolicy becomes classification, also job-wide. Where
// the source's per-task values differ, or its cap on the Framework's
// attempts cannot be kept, the report says so.
func fcFailurePolicy(job *fcRetry, jobPath path, tasks []fcTaskRetry) (musterv1.FailurePolicy, []noted) {
	fp := musterv1.FailurePolicy{BackoffLimit: ptr(unlimited)}
	var notes []noted
	var perTask *int32
	var from string
	for _, t := range tasks {
		if t.capped && (perTask == nil || t.retry.max > *perTask) {
			perTask, from = ptr(t.retry.max), t.role
		}
	}
	if perTask != nil {
		fp.BackoffLimitPerTask = perTask
		for _, t := range tasks {
			if !t.capped || t.retry.max != *perTask {
				own := fmt.Sprint(t.retry.max)
				if !t.capped {
					own = "none"
				}
				notes = append(notes, noted{t.p.child("maxRetryCount"), fmt.Sprintf(
					"Muster has one per-task restart budget for the job: failurePolicy.backoffLimitPerTask %d (from role %s) bounds this role's accountable restarts too (its own limit: %s)",
					*perTask, from, own)})
			}
		}
	}
	fancy, plain := 0, 0
	consider := func(r fcRetry) {
		if r.fancy {
			fancy++
		} else {
			plain++
		}
	}
	if job != nil {
		consider(*job)
	}
	for _, t := range tasks {
		consider(t.retry)
	}
	if fancy == 0 {
		fp.Classification = &musterv1.Classification{Enabled: ptr(false)}
	} else if plain > 0 {
		for _, t := range tasks {
			if !t.retry.fancy {
				notes = append(notes, noted{t.p.child("fancyRetryPolicy"),
					"Muster classifies failures for the whole job (another retry policy here is fancy): a Permanent failure of this role is no longer retried"})
			}
		}
	}
	if job != nil {
		var why string
		fp.Retry, why = fcJobRetry(*job, *fp.BackoffLimit)
		if why != "" {
			notes = append(notes, noted{jobPath.child("maxRetryCount"), why})
		}
	}
	return fp, notes
}

// fcJobRetry is the Framework's retryPolicy: -2 retries every attempt,
// even a successful one; -1 every failed one; N up to N accountable times,
// and 0 with fancy only transient failures, which never count. Muster's
// new attempts are charged to backoffLimit, the job's one budget, which
// FrameworkController's attempts are folded into: a cap of N of their own
// cannot be kept, and the reason says so.
func fcJobRetry(r fcRetry, backoffLimit int32) (*musterv1.RetryPolicy, string) {
	switch {
	case r.max == -2:
		return &musterv1.RetryPolicy{Policy: musterv1.RetryAlways}, ""
	case r.max == -1:
		return &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}, ""
	case r.max <= 0 && !r.fancy:
		return nil, ""
	case r.max <= 0:
		return &musterv1.RetryPolicy{Policy: musterv1.RetryOnTransientFailure}, ""
	default:
		return &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}, fmt.Sprintf(
			"Muster has no separate cap on new attempts of the job: failurePolicy.backoffLimit %d, the one budget of every restart, "+
				"bounds them (their own limit: %d)", backoffLimit, r.max)
	}
}

func deref(v *int32) int32 {
	if v == nil {
		return 0
	}
	return *v
}

func int64p(s *source, p path) (*int64, bool, error) {
	n, ok, err := s.integer(p)
	if err != nil || !ok {
		return nil, ok, err
	}
	return &n, true, nil
}
