package policy

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePolicies checks lifecycle policies. roleNames are the job's
// roles; path is where the policies sit in the caller's object.
//
// Each policy needs exactly one of events and exit codes (0 is not a
// failure), a known action, and a known role if it names one. RestartPod
// needs pod events or exit codes, since it acts on one pod; RestartRole
// cannot answer Unknown, which belongs to no role. PodPending needs a
// timeout, since every pod is Pending for a while as it starts.
//
// Within one scope (one role, or job-wide) it also rejects:
//   - the same event or exit code twice: Duplicate if the actions agree,
//     Invalid ("contradicts") if they do not, since only the first would
//     ever run;
//   - "*" next to any other trigger, which it would hide;
//   - an exit-code policy listed after a PodFailed policy, which takes
//     every failed pod first and so hides it.
func ValidatePolicies(policies []Policy, roleNames []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, p := range policies {
		errs = append(errs, validatePolicy(p, roleNames, path.Index(i))...)
	}
	return append(errs, validateScopes(policies, path)...)
}

func validatePolicy(p Policy, roleNames []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.Role != "" && !slices.Contains(roleNames, p.Role) {
		errs = append(errs, field.NotFound(path.Child("role"), p.Role))
	}
	switch {
	case len(p.Events) > 0 && len(p.ExitCodes) > 0:
		errs = append(errs, field.Forbidden(path.Child("exitCodes"), "events and exitCodes are mutually exclusive"))
	case len(p.Events) == 0 && len(p.ExitCodes) == 0:
		errs = append(errs, field.Required(path, "one of events or exitCodes"))
	}
	for j, e := range p.Events {
		if !slices.Contains(policyEvents, e) {
			errs = append(errs, field.NotSupported(path.Child("events").Index(j), e, policyEvents))
		}
	}
	for j, c := range p.ExitCodes {
		if c == 0 {
			errs = append(errs, field.Invalid(path.Child("exitCodes").Index(j), c, "0 is success, not a failure"))
		}
	}
	errs = append(errs, validateAction(p, path.Child("action"))...)
	return append(errs, validateTimeout(p, path.Child("timeoutSeconds"))...)
}

func validateAction(p Policy, path *field.Path) field.ErrorList {
	switch {
	case p.Action == "":
		return field.ErrorList{field.Required(path, "")}
	case !slices.Contains(policyActions, p.Action):
		return field.ErrorList{field.NotSupported(path, p.Action, policyActions)}
	case p.Action == ActionRestartPod && slices.ContainsFunc(p.Events, func(e Event) bool { return !slices.Contains(podEvents, e) }):
		return field.ErrorList{field.Invalid(path, p.Action,
			"RestartPod needs an event about one pod (PodFailed, PodEvicted, PodPending) or exit codes")}
	case p.Action == ActionRestartRole && slices.Contains(p.Events, EventUnknown):
		return field.ErrorList{field.Invalid(path, p.Action, "the Unknown event belongs to no role; restart the job instead")}
	}
	return nil
}

func validateTimeout(p Policy, path *field.Path) field.ErrorList {
	switch {
	case p.TimeoutSeconds != nil && *p.TimeoutSeconds < 1:
		return field.ErrorList{field.Invalid(path, *p.TimeoutSeconds, "must be at least 1")}
	case p.TimeoutSeconds == nil && slices.Contains(p.Events, EventPodPending):
		return field.ErrorList{field.Required(path, "PodPending needs a timeout: every pod is Pending for a while when it starts")}
	}
	return nil
}

// trigger is one event, or one exit code (event empty), in one scope.
type trigger struct {
	scope string
	event Event
	code  int32
}

// firstUse is where a trigger was first used, and with which action.
type firstUse struct {
	path   *field.Path
	action Action
}

// scopeState is what validateScopes remembers about one scope.
type scopeState struct {
	triggers  int
	anyAt     *field.Path
	podFailed int // index of the first policy naming PodFailed, or -1
}

func validateScopes(policies []Policy, path *field.Path) field.ErrorList {
	var (
		errs   field.ErrorList
		seen   = map[trigger]firstUse{}
		scopes = map[string]*scopeState{}
		order  []string
	)
	use := func(t trigger, at *field.Path, value any, action Action) {
		if prev, ok := seen[t]; ok {
			errs = append(errs, conflict(prev, at, value, action))
			return
		}
		seen[t] = firstUse{path: at, action: action}
	}
	for i, p := range policies {
		s := scopes[p.Role]
		if s == nil {
			s = &scopeState{podFailed: -1}
			scopes[p.Role] = s
			order = append(order, p.Role)
		}
		for j, e := range p.Events {
			if !slices.Contains(policyEvents, e) {
				continue // reported by validatePolicy
			}
			at := path.Index(i).Child("events").Index(j)
			use(trigger{scope: p.Role, event: e}, at, e, p.Action)
			s.triggers++
			if e == EventAny && s.anyAt == nil {
				s.anyAt = at
			}
			if e == EventPodFailed && s.podFailed < 0 {
				s.podFailed = i
			}
		}
		for j, c := range p.ExitCodes {
			if c == 0 {
				continue // reported by validatePolicy
			}
			use(trigger{scope: p.Role, code: c}, path.Index(i).Child("exitCodes").Index(j), c, p.Action)
			s.triggers++
		}
		if len(p.ExitCodes) > 0 && len(p.Events) == 0 && s.podFailed >= 0 && s.podFailed < i {
			errs = append(errs, field.Invalid(path.Index(i).Child("exitCodes"), p.ExitCodes,
				fmt.Sprintf("never reached: %s takes every failed pod first; list exit-code policies before it",
					path.Index(s.podFailed))))
		}
	}
	for _, scope := range order {
		if s := scopes[scope]; s.anyAt != nil && s.triggers > 1 {
			errs = append(errs, field.Invalid(s.anyAt, EventAny,
				fmt.Sprintf("\"*\" must be the only trigger of %s: it would hide the others", scopeName(scope))))
		}
	}
	return errs
}

// conflict reports a trigger used a second time in one scope.
func conflict(prev firstUse, at *field.Path, value any, action Action) *field.Error {
	if prev.action == action {
		return field.Duplicate(at, value)
	}
	return field.Invalid(at, value, fmt.Sprintf("contradicts %s, which takes action %s on the same trigger", prev.path, prev.action))
}

func scopeName(scope string) string {
	if scope == "" {
		return "the job-wide policies"
	}
	return fmt.Sprintf("role %q's policies", scope)
}
