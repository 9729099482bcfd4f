package failure

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

var (
	fuzzEvents  = []musterv1.FailureEvent{musterv1.EventPodFailed, musterv1.EventPodEvicted, musterv1.EventPodPending, musterv1.EventTaskCompleted, musterv1.EventTaskFailed, musterv1.EventPartlyPlaced}
	fuzzActions = []musterv1.FailureAction{musterv1.ActionRestartTask, musterv1.ActionRestartRole, musterv1.ActionRestartJob, musterv1.ActionFailTask, musterv1.ActionFailJob, musterv1.ActionFailJob, musterv1.ActionCompleteJob, musterv1.ActionSuspendJob}
	fuzzClasses = []musterv1.FailureClass{musterv1.ClassTransient, musterv1.ClassPermanent, musterv1.ClassUnknown}
	fuzzRoles   = []string{"a", "b", "c"}
	// A few codes, so that rules and events share them often.
	fuzzCodes = []int32{0, 1, 2, 137, 143, 255}
)

// some is a random subset of xs, in a random order, possibly empty.
func some[T any](r *rand.Rand, xs []T) []T {
	var out []T
	for _, i := range r.Perm(len(xs)) {
		if r.IntN(3) == 0 {
			out = append(out, xs[i])
		}
	}
	return out
}

// fuzzRule is any rule the types allow, valid or not.
func fuzzRule(r *rand.Rand) musterv1.FailureRule {
	rule := musterv1.FailureRule{
		Action:    fuzzActions[r.IntN(len(fuzzActions))],
		Roles:     some(r, fuzzRoles),
		OnEvents:  some(r, fuzzEvents),
		OnClasses: some(r, fuzzClasses),
	}
	if r.IntN(2) == 0 {
		rule.OnExitCodes = musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: some(r, fuzzCodes)}
		if r.IntN(2) == 0 {
			rule.OnExitCodes.Operator = musterv1.ExitCodeNotIn
		}
	}
	if r.IntN(4) == 0 {
		rule.TimeoutSeconds = r.Int32N(100)
	}
	return rule
}

// fuzzEvent is an event as the planner makes them: PartlyPlaced is about
// the whole job and has no role, the others have one; only a failed pod
// has an exit code, and only an ended pod a class.
func fuzzEvent(r *rand.Rand) Observed {
	ev := Observed{Event: fuzzEvents[r.IntN(len(fuzzEvents))]}
	if ev.Event != musterv1.EventPartlyPlaced {
		ev.Role = fuzzRoles[r.IntN(len(fuzzRoles))]
	}
	switch ev.Event {
	case musterv1.EventPodFailed:
		ev.ExitCode = new(fuzzCodes[r.IntN(len(fuzzCodes))])
		fallthrough
	case musterv1.EventPodEvicted:
		ev.Class = fuzzClasses[r.IntN(len(fuzzClasses))]
	}
	return ev
}

// FuzzRuleMatch checks failure rules against events:
//   - Match returns the first rule that matches as the API documents it
//     (specMatches), or none when none does;
//   - a rule ValidateRules rejects as unreachable (an earlier rule covers
//     it) is never the one Match picks, and the covering rule matches
//     every event it does: the check never rejects a rule that could run;
//   - ValidateRules is deterministic and every error names a field under
//     the path it was given.
func FuzzRuleMatch(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x80\x80\x80\x80"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := testutil.FuzzRand(data)
		rules := make([]musterv1.FailureRule, r.IntN(6))
		for i := range rules {
			rules[i] = fuzzRule(r)
		}
		path := field.NewPath("spec", "failurePolicy", "rules")
		errs := ValidateRules(rules, path)
		if again := ValidateRules(rules, path); !reflect.DeepEqual(errs, again) {
			t.Fatalf("ValidateRules is not deterministic:\n%v\n%v", errs, again)
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, path.String()+"[") {
				t.Fatalf("error %q is not about a rule", e)
			}
		}
		for range 12 {
			ev := fuzzEvent(r)
			i, ok := Match(rules, ev)
			checkMatch(t, rules, ev, i, ok)
		}
	})
}

// specMatches is whether rule matches ev as the API documents it (the
// field docs of FailureRule), written from them and not from Match, so
// that the fuzzer checks Match against something it does not share code
// with:
//   - roles: empty is every role and the job-wide PartlyPlaced; else the
//     event's role is one of them;
//   - onEvents: the events matched; with onExitCodes or onClasses and no
//     onEvents, PodFailed and PodEvicted (a rule with no criterion at all
//     is invalid; it is read the same way);
//   - onExitCodes: the failed container's exit code, In or NotIn the
//     values; an event without an exit code does not match;
//   - onClasses: the class the failed pod was given;
//   - an action on a task or role (RestartTask, FailTask, RestartRole)
//     has nothing to act on in an event about no role.
func specMatches(rule *musterv1.FailureRule, ev Observed) bool {
	switch rule.Action {
	case musterv1.ActionRestartTask, musterv1.ActionFailTask, musterv1.ActionRestartRole:
		if ev.Role == "" {
			return false
		}
	}
	if len(rule.Roles) > 0 && !slices.Contains(rule.Roles, ev.Role) {
		return false
	}
	events := rule.OnEvents
	if len(events) == 0 {
		events = []musterv1.FailureEvent{musterv1.EventPodFailed, musterv1.EventPodEvicted}
	}
	if !slices.Contains(events, ev.Event) {
		return false
	}
	if op := rule.OnExitCodes.Operator; op != "" {
		if ev.ExitCode == nil {
			return false
		}
		listed := slices.Contains(rule.OnExitCodes.Values, *ev.ExitCode)
		if (op == musterv1.ExitCodeIn) != listed {
			return false
		}
	}
	return len(rule.OnClasses) == 0 || slices.Contains(rule.OnClasses, ev.Class)
}

func checkMatch(t *testing.T, rules []musterv1.FailureRule, ev Observed, i int, ok bool) {
	t.Helper()
	first := -1
	for j := range rules {
		if specMatches(&rules[j], ev) {
			first = j
			break
		}
	}
	if ok != (first >= 0) || i != first {
		t.Fatalf("Match(%+v) = %d, %v; the first matching rule is %d\nrules: %+v", ev, i, ok, first, rules)
	}
	for b := range rules {
		for a := range b {
			if covers(&rules[a], &rules[b]) && specMatches(&rules[b], ev) && !specMatches(&rules[a], ev) {
				t.Fatalf("rule %d is said to cover rule %d, but only %d matches %+v\nrules: %+v", a, b, b, ev, rules)
			}
		}
	}
}
