package failure

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// ValidateRules checks failure rules taken together, which CEL cannot: a
// rule that an earlier rule makes unreachable (the first match wins, so it
// would never run) is an error, whether the two agree on the action (a
// duplicate) or not (a contradiction the user did not mean). It also
// repeats the per-rule checks of the schema, so that the operator can
// trust rules that never went through admission.
func ValidateRules(rules []musterv1.FailureRule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range rules {
		errs = append(errs, validateRule(&rules[i], path.Index(i))...)
	}
	for j := range rules {
		for i := range j {
			if covers(&rules[i], &rules[j]) {
				errs = append(errs, field.Invalid(path.Index(j), describe(&rules[j]),
					fmt.Sprintf("never matches: %s (action %s) matches every event this rule matches, and the first match wins; list the narrower rule first",
						path.Index(i), rules[i].Action)))
				break
			}
		}
	}
	return errs
}

func validateRule(r *musterv1.FailureRule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.OnEvents) == 0 && !hasExitCodes(r) && len(r.OnClasses) == 0 {
		errs = append(errs, field.Required(path.Child("onEvents"), "set at least one of onEvents, onExitCodes and onClasses"))
	}
	pending := slices.Contains(r.OnEvents, musterv1.EventPodPending)
	if pending && r.TimeoutSeconds == 0 {
		errs = append(errs, field.Required(path.Child("timeoutSeconds"), "PodPending needs a timeout: every pod is Pending for a while when it starts"))
	}
	if r.OnExitCodes.Operator == musterv1.ExitCodeIn && slices.Contains(r.OnExitCodes.Values, 0) {
		errs = append(errs, field.Invalid(path.Child("onExitCodes", "values"), 0, "0 is success, not a failure; with operator In it can never match"))
	}
	for _, e := range jobEvents {
		if len(r.Roles) > 0 && slices.Contains(r.OnEvents, e) {
			errs = append(errs, field.Invalid(path.Child("roles"), r.Roles, string(e)+" belongs to the whole job, not to roles"))
		}
	}
	// The CRD's CEL rules say the same; they are checked here too because a
	// job can skip them (stored before a rule existed, or kept by ratcheting
	// on update), and the planner must never act on such a rule: a task
	// action on a task-wide event has no pod to act on.
	if r.TimeoutSeconds != 0 && (len(r.OnEvents) == 0 || !only(r.OnEvents, musterv1.EventPodPending)) {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), r.TimeoutSeconds, "timeoutSeconds applies to the PodPending event only"))
	}
	if (hasExitCodes(r) || len(r.OnClasses) > 0) && !only(r.OnEvents, musterv1.EventPodFailed, musterv1.EventPodEvicted) {
		errs = append(errs, field.Invalid(path.Child("onEvents"), r.OnEvents,
			"onExitCodes and onClasses describe a pod's end: with them, onEvents may name only PodFailed and PodEvicted"))
	}
	if (r.Action == musterv1.ActionRestartTask || r.Action == musterv1.ActionFailTask) &&
		!only(r.OnEvents, musterv1.EventPodFailed, musterv1.EventPodEvicted, musterv1.EventPodPending) {
		errs = append(errs, field.Invalid(path.Child("onEvents"), r.OnEvents,
			fmt.Sprintf("action %s acts on one pod: onEvents may name only PodFailed, PodEvicted and PodPending", r.Action)))
	}
	return errs
}

// only is whether every event is one of allowed (true for none).
func only(events []musterv1.FailureEvent, allowed ...musterv1.FailureEvent) bool {
	for _, e := range events {
		if !slices.Contains(allowed, e) {
			return false
		}
	}
	return true
}

// covers is whether every event b matches, a matches too.
func covers(a, b *musterv1.FailureRule) bool {
	if len(a.Roles) > 0 && (len(b.Roles) == 0 || !subset(b.Roles, a.Roles)) {
		return false
	}
	if !subset(eventsOf(b), eventsOf(a)) {
		return false
	}
	if slices.Contains(taskActions, a.Action) && slices.ContainsFunc(eventsOf(b), func(e musterv1.FailureEvent) bool { return slices.Contains(jobEvents, e) }) {
		// a passes over the job-wide events that b takes.
		return false
	}
	return exitCodesCover(a, b) && (len(a.OnClasses) == 0 || (len(b.OnClasses) > 0 && subset(b.OnClasses, a.OnClasses)))
}

// exitCodesCover is whether every exit code b accepts, a accepts.
func exitCodesCover(ra, rb *musterv1.FailureRule) bool {
	a, b := &ra.OnExitCodes, &rb.OnExitCodes
	switch {
	case !hasExitCodes(ra):
		return true
	case !hasExitCodes(rb):
		return false
	case a.Operator == musterv1.ExitCodeIn && b.Operator == musterv1.ExitCodeIn:
		return subset(b.Values, a.Values)
	case a.Operator == musterv1.ExitCodeNotIn && b.Operator == musterv1.ExitCodeNotIn:
		return subset(a.Values, b.Values)
	case a.Operator == musterv1.ExitCodeNotIn && b.Operator == musterv1.ExitCodeIn:
		return !slices.ContainsFunc(b.Values, func(v int32) bool { return slices.Contains(a.Values, v) })
	}
	return false
}

func subset[T comparable](small, big []T) bool {
	for _, x := range small {
		if !slices.Contains(big, x) {
			return false
		}
	}
	return true
}

// describe is a rule in a few words, for error messages.
func describe(r *musterv1.FailureRule) string {
	s := fmt.Sprintf("action %s on %v", r.Action, eventsOf(r))
	if len(r.Roles) > 0 {
		s += fmt.Sprintf(" of roles %v", r.Roles)
	}
	return s
}
