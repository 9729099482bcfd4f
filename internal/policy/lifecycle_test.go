package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatch(t *testing.T) {
	code := func(c int32) *int32 { return &c }
	timeout := int32(60)
	// The Volcano PaddlePaddle example, in Muster's terms, plus a few more.
	policies := []Policy{
		{Role: "trainer", Events: []Event{EventTaskCompleted}, Action: ActionCompleteJob},
		{Role: "trainer", ExitCodes: []int32{137, 143}, Action: ActionRestartPod},
		{Role: "trainer", Events: []Event{EventPodFailed}, Action: ActionRestartRole},
		{Role: "pserver", Events: []Event{EventAny}, Action: ActionFailJob},
		{ExitCodes: []int32{3}, Action: ActionTerminateJob},
		{Events: []Event{EventPodEvicted, EventPodFailed}, Action: ActionRestartJob},
		{Events: []Event{EventPodPending}, Action: ActionRestartPod, TimeoutSeconds: &timeout},
		{Events: []Event{EventUnknown}, Action: ActionSuspendJob},
		{Role: "eval", Events: []Event{EventTaskFailed}, Action: ActionRestartRole},
	}
	cases := map[string]struct {
		policies []Policy
		ev       Observed
		want     int // index into policies, or -1 for no match
	}{
		"role event":                               {policies, Observed{Event: EventTaskCompleted, Role: "trainer"}, 0},
		"role exit code":                           {policies, Observed{Event: EventPodFailed, Role: "trainer", ExitCode: code(143)}, 1},
		"role event after its exit codes":          {policies, Observed{Event: EventPodFailed, Role: "trainer", ExitCode: code(1)}, 2},
		"role event without an exit code":          {policies, Observed{Event: EventPodFailed, Role: "trainer"}, 2},
		"role before job":                          {policies, Observed{Event: EventPodEvicted, Role: "pserver"}, 3},
		"falls back to the job":                    {policies, Observed{Event: EventPodEvicted, Role: "trainer"}, 5},
		"job exit code":                            {policies, Observed{Event: EventPodFailed, Role: "worker", ExitCode: code(3)}, 4},
		"job event after job exit code":            {policies, Observed{Event: EventPodFailed, Role: "worker", ExitCode: code(4)}, 5},
		"exit codes only match PodFailed":          {[]Policy{policies[4]}, Observed{Event: EventPodEvicted, Role: "worker", ExitCode: code(3)}, -1},
		"pending":                                  {policies, Observed{Event: EventPodPending, Role: "worker"}, 6},
		"job-wide event":                           {policies, Observed{Event: EventUnknown}, 7},
		"a role's policy does not see other roles": {policies, Observed{Event: EventTaskFailed, Role: "trainer"}, -1},
		"scoped task failure":                      {policies, Observed{Event: EventTaskFailed, Role: "eval"}, 8},
		"no match":                                 {policies, Observed{Event: EventTaskCompleted, Role: "worker"}, -1},
		"no policies":                              {nil, Observed{Event: EventPodFailed, Role: "worker"}, -1},
		"* matches any event": {[]Policy{{Events: []Event{EventAny}, Action: ActionFailJob}},
			Observed{Event: EventTaskFailed, Role: "worker"}, 0},
		"* does not match PodRunning": {[]Policy{{Events: []Event{EventAny}, Action: ActionFailJob}},
			Observed{Event: EventPodRunning, Role: "worker"}, -1},
		"an observed * is not an event": {[]Policy{{Events: []Event{EventAny}, Action: ActionFailJob}},
			Observed{Event: EventAny}, -1},
		"RestartRole needs a role": {[]Policy{{Events: []Event{EventAny}, Action: ActionRestartRole}, {Events: []Event{EventAny}, Action: ActionRestartJob}},
			Observed{Event: EventUnknown}, 1},
		"first match wins in a scope": {[]Policy{{Events: []Event{EventPodFailed}, Action: ActionRestartPod}, {Events: []Event{EventPodFailed}, Action: ActionFailJob}},
			Observed{Event: EventPodFailed, Role: "w"}, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Match(tc.policies, tc.ev)
			var want Policy
			if tc.want >= 0 {
				want = tc.policies[tc.want]
			}
			if ok != (tc.want >= 0) {
				t.Fatalf("Match ok = %v, want %v (got %+v)", ok, tc.want >= 0, got)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Match (-want +got):\n%s", diff)
			}
		})
	}
}
