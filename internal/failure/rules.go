package failure

import (
	"slices"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Observed is an event of a job as the planner saw it, in the terms the
// failure rules match.
type Observed struct {
	Event musterv1.FailureEvent
	// Role is the role the event is about; empty for job-wide events
	// (PartlyPlaced, Stalled).
	Role string
	// ExitCode is, for PodFailed, the exit code of the pod's failed
	// container that finished first: the same container the task's last
	// exit reports.
	ExitCode *int32
	// Class is the failed pod's class, for PodFailed and PodEvicted.
	Class musterv1.FailureClass
}

// podEndEvents are what a rule with onExitCodes or onClasses and no
// onEvents matches.
var podEndEvents = []musterv1.FailureEvent{musterv1.EventPodFailed, musterv1.EventPodEvicted}

// jobEvents are about the whole job: no role, no task.
var jobEvents = []musterv1.FailureEvent{musterv1.EventPartlyPlaced, musterv1.EventStalled}

// taskActions act on the task the event is about, so they need one.
var taskActions = []musterv1.FailureAction{musterv1.ActionRestartTask, musterv1.ActionFailTask, musterv1.ActionRestartRole}

// Match returns the index of the first rule that matches ev, in order; ok
// is false when none does and the role's restartPolicy decides. A rule
// matches when every criterion it sets does:
//   - roles: the event is about one of them (job-wide events have none);
//   - onEvents: the event is one of them; unset, the rule matches the end
//     of a pod (PodFailed, PodEvicted);
//   - onExitCodes: the event has an exit code, and it is (In) or is not
//     (NotIn) one of the values; an evicted pod has none;
//   - onClasses: the pod's class is one of them.
//
// A rule whose action acts on a task never matches an event about none.
func Match(rules []musterv1.FailureRule, ev Observed) (int, bool) {
	for i := range rules {
		if ruleMatches(&rules[i], ev) {
			return i, true
		}
	}
	return -1, false
}

func ruleMatches(r *musterv1.FailureRule, ev Observed) bool {
	if ev.Role == "" && slices.Contains(taskActions, r.Action) {
		return false
	}
	if len(r.Roles) > 0 && !slices.Contains(r.Roles, ev.Role) {
		return false
	}
	if !slices.Contains(eventsOf(r), ev.Event) {
		return false
	}
	if m := r.OnExitCodes; hasExitCodes(r) {
		if ev.ExitCode == nil || slices.Contains(m.Values, *ev.ExitCode) != (m.Operator == musterv1.ExitCodeIn) {
			return false
		}
	}
	return len(r.OnClasses) == 0 || slices.Contains(r.OnClasses, ev.Class)
}

// eventsOf is the events a rule can match: its onEvents, or by default
// the end of a pod; only a failed pod has an exit code.
func eventsOf(r *musterv1.FailureRule) []musterv1.FailureEvent {
	switch {
	case len(r.OnEvents) > 0:
		return r.OnEvents
	case hasExitCodes(r):
		return []musterv1.FailureEvent{musterv1.EventPodFailed}
	}
	return podEndEvents
}

// hasExitCodes is whether the rule sets onExitCodes.
func hasExitCodes(r *musterv1.FailureRule) bool { return r.OnExitCodes.Operator != "" }

// ClassOf is the class a pod's end was given by its attributes.
func ClassOf(attributes []string) musterv1.FailureClass {
	switch {
	case slices.Contains(attributes, string(AttributeTransient)):
		return musterv1.ClassTransient
	case slices.Contains(attributes, string(AttributePermanent)):
		return musterv1.ClassPermanent
	}
	return musterv1.ClassUnknown
}
