package failure

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func in(codes ...int32) musterv1.ExitCodeMatch {
	return musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: codes}
}

func notIn(codes ...int32) musterv1.ExitCodeMatch {
	return musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeNotIn, Values: codes}
}

func evs(e ...musterv1.FailureEvent) []musterv1.FailureEvent { return e }

func TestMatch(t *testing.T) {
	code := func(c int32) *int32 { return &c }
	// Volcano's PaddlePaddle example in Muster's terms, plus a few more.
	rules := []musterv1.FailureRule{
		{Roles: []string{"trainer"}, OnEvents: evs(musterv1.EventTaskCompleted), Action: musterv1.ActionCompleteJob},                  // 0
		{Roles: []string{"trainer"}, OnExitCodes: in(137, 143), Action: musterv1.ActionRestartTask},                                   // 1
		{Roles: []string{"trainer"}, OnEvents: evs(musterv1.EventPodFailed), Action: musterv1.ActionRestartRole},                      // 2
		{Roles: []string{"pserver"}, OnClasses: []musterv1.FailureClass{musterv1.ClassTransient}, Action: musterv1.ActionRestartTask}, // 3
		{OnExitCodes: in(3), Action: musterv1.ActionFailJob},                                                                          // 4
		{OnEvents: evs(musterv1.EventPodEvicted, musterv1.EventPodFailed), Action: musterv1.ActionRestartJob},                         // 5
		{OnEvents: evs(musterv1.EventPodPending), Action: musterv1.ActionRestartTask},                                                 // 6
		{OnEvents: evs(musterv1.EventPartlyPlaced), Action: musterv1.ActionSuspendJob},                                                // 7
		{Roles: []string{"eval"}, OnEvents: evs(musterv1.EventTaskFailed), Action: musterv1.ActionRestartRole},                        // 8
	}
	transient, unknown := musterv1.ClassTransient, musterv1.ClassUnknown
	cases := map[string]struct {
		rules []musterv1.FailureRule
		ev    Observed
		want  int // -1 for no match
	}{
		"role event":                        {rules, Observed{Event: musterv1.EventTaskCompleted, Role: "trainer"}, 0},
		"role exit code":                    {rules, Observed{Event: musterv1.EventPodFailed, Role: "trainer", ExitCode: code(143), Class: transient}, 1},
		"first match wins, in order":        {rules, Observed{Event: musterv1.EventPodFailed, Role: "trainer", ExitCode: code(3)}, 2},
		"class of an evicted pod":           {rules, Observed{Event: musterv1.EventPodEvicted, Role: "pserver", Class: transient}, 3},
		"other class falls through":         {rules, Observed{Event: musterv1.EventPodFailed, Role: "pserver", ExitCode: code(1), Class: unknown}, 5},
		"job-wide exit code":                {rules, Observed{Event: musterv1.EventPodFailed, Role: "worker", ExitCode: code(3)}, 4},
		"exit codes need an exit code":      {rules[4:5], Observed{Event: musterv1.EventPodEvicted, Role: "worker"}, -1},
		"pending":                           {rules, Observed{Event: musterv1.EventPodPending, Role: "worker"}, 6},
		"job-wide event":                    {rules, Observed{Event: musterv1.EventPartlyPlaced}, 7},
		"a role's rule does not see others": {rules, Observed{Event: musterv1.EventTaskFailed, Role: "trainer"}, -1},
		"scoped task failure":               {rules, Observed{Event: musterv1.EventTaskFailed, Role: "eval"}, 8},
		"no match":                          {rules, Observed{Event: musterv1.EventTaskCompleted, Role: "worker"}, -1},
		"no rules":                          {nil, Observed{Event: musterv1.EventPodFailed, Role: "worker"}, -1},
		"NotIn":                             {[]musterv1.FailureRule{{OnExitCodes: notIn(1, 2), Action: musterv1.ActionFailJob}}, Observed{Event: musterv1.EventPodFailed, Role: "w", ExitCode: code(3)}, 0},
		"NotIn, listed":                     {[]musterv1.FailureRule{{OnExitCodes: notIn(1, 2), Action: musterv1.ActionFailJob}}, Observed{Event: musterv1.EventPodFailed, Role: "w", ExitCode: code(2)}, -1},
		"classes alone match pod ends only": {[]musterv1.FailureRule{{OnClasses: []musterv1.FailureClass{unknown}, Action: musterv1.ActionFailJob}}, Observed{Event: musterv1.EventTaskFailed, Role: "w", Class: unknown}, -1},
		"task actions need a task":          {[]musterv1.FailureRule{{OnEvents: evs(musterv1.EventPartlyPlaced), Action: musterv1.ActionRestartRole}, {OnEvents: evs(musterv1.EventPartlyPlaced), Action: musterv1.ActionRestartJob}}, Observed{Event: musterv1.EventPartlyPlaced}, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Match(tc.rules, tc.ev)
			if ok != (tc.want >= 0) || (ok && got != tc.want) {
				t.Fatalf("Match = %d, %v; want %d", got, ok, tc.want)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	timeout := int32(60)
	cases := map[string]struct {
		rules []musterv1.FailureRule
		want  []string // substrings of the errors; none: valid
	}{
		"valid": {rules: []musterv1.FailureRule{
			{Roles: []string{"w"}, OnExitCodes: in(3), Action: musterv1.ActionRestartTask},
			{OnEvents: evs(musterv1.EventPodFailed), Action: musterv1.ActionRestartJob},
			{OnEvents: evs(musterv1.EventPodPending), TimeoutSeconds: timeout, Action: musterv1.ActionRestartTask},
		}},
		"no criterion": {rules: []musterv1.FailureRule{{Action: musterv1.ActionFailJob}},
			want: []string{"rules[0].onEvents: Required value"}},
		"pending without a timeout": {rules: []musterv1.FailureRule{{OnEvents: evs(musterv1.EventPodPending), Action: musterv1.ActionRestartTask}},
			want: []string{"rules[0].timeoutSeconds: Required value"}},
		"exit code 0 with In": {rules: []musterv1.FailureRule{{OnExitCodes: in(0), Action: musterv1.ActionFailJob}},
			want: []string{"rules[0].onExitCodes.values"}},
		"same events twice, same action": {rules: []musterv1.FailureRule{
			{OnEvents: evs(musterv1.EventPodFailed), Action: musterv1.ActionRestartJob},
			{OnEvents: evs(musterv1.EventPodFailed), Action: musterv1.ActionRestartJob},
		}, want: []string{"rules[1]: Invalid value: \"action RestartJob on [PodFailed]\": never matches: spec.failurePolicy.rules[0] (action RestartJob)"}},
		"a contradiction": {rules: []musterv1.FailureRule{
			{Roles: []string{"ps"}, OnEvents: evs(musterv1.EventPodFailed), Action: musterv1.ActionRestartRole},
			{Roles: []string{"ps"}, OnEvents: evs(musterv1.EventPodFailed), Action: musterv1.ActionFailJob},
		}, want: []string{"rules[1]", "never matches: spec.failurePolicy.rules[0] (action RestartRole)"}},
		"a broad rule hides a narrow one": {rules: []musterv1.FailureRule{
			{OnEvents: evs(musterv1.EventPodFailed), Action: musterv1.ActionRestartJob},
			{Roles: []string{"w"}, OnExitCodes: in(3), Action: musterv1.ActionRestartTask},
		}, want: []string{"rules[1]", "list the narrower rule first"}},
		"narrow first is fine": {rules: []musterv1.FailureRule{
			{Roles: []string{"w"}, OnExitCodes: in(3), Action: musterv1.ActionRestartTask},
			{OnExitCodes: notIn(3), Action: musterv1.ActionRestartJob},
			{OnEvents: evs(musterv1.EventPodFailed, musterv1.EventPodEvicted), Action: musterv1.ActionFailJob},
		}},
		"NotIn covers the In it excludes nothing of": {rules: []musterv1.FailureRule{
			{OnExitCodes: notIn(1), Action: musterv1.ActionRestartJob},
			{OnExitCodes: in(2, 3), Action: musterv1.ActionFailJob},
		}, want: []string{"rules[1]"}},
		// What the CRD's CEL rules refuse, for a job that skipped them.
		"a timeout on another event": {rules: []musterv1.FailureRule{{OnEvents: evs(musterv1.EventPodFailed), TimeoutSeconds: timeout, Action: musterv1.ActionRestartTask}},
			want: []string{"rules[0].timeoutSeconds", "PodPending event only"}},
		"exit codes on a task-wide event": {rules: []musterv1.FailureRule{{OnEvents: evs(musterv1.EventTaskFailed), OnExitCodes: in(3), Action: musterv1.ActionFailJob}},
			want: []string{"rules[0].onEvents", "may name only PodFailed and PodEvicted"}},
		"a task action on TaskFailed": {rules: []musterv1.FailureRule{{OnEvents: evs(musterv1.EventTaskFailed), Action: musterv1.ActionRestartTask}},
			want: []string{"rules[0].onEvents", "action RestartTask acts on one pod"}},
		"a task action on TaskCompleted": {rules: []musterv1.FailureRule{{OnEvents: evs(musterv1.EventTaskCompleted), Action: musterv1.ActionFailTask}},
			want: []string{"rules[0].onEvents", "action FailTask acts on one pod"}},
		"class rules": {rules: []musterv1.FailureRule{
			{OnClasses: []musterv1.FailureClass{musterv1.ClassTransient}, Action: musterv1.ActionRestartTask},
			{OnClasses: []musterv1.FailureClass{musterv1.ClassTransient, musterv1.ClassUnknown}, Action: musterv1.ActionRestartJob},
		}},
		"a task action does not hide a job-wide event": {rules: []musterv1.FailureRule{
			{OnEvents: evs(musterv1.EventPartlyPlaced, musterv1.EventPodFailed), Action: musterv1.ActionRestartRole},
			{OnEvents: evs(musterv1.EventPartlyPlaced), Action: musterv1.ActionRestartJob},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateRules(tc.rules, field.NewPath("spec", "failurePolicy", "rules"))
			if (len(errs) == 0) != (len(tc.want) == 0) {
				t.Fatalf("errors %v, want errors with %q", errs, tc.want)
			}
			all := errs.ToAggregate()
			for _, w := range tc.want {
				if all == nil || !strings.Contains(all.Error(), w) {
					t.Errorf("errors %v lack %q", all, w)
				}
			}
		})
	}
}
