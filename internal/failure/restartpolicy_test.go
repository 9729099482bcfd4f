package failure

import (
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// decided is the part of a Decision the restart policy sets.
type decided struct {
	Action      musterv1.FailureAction
	Accountable bool
}

// TestRestartPolicy is each restart policy's answer to each kind of end,
// with no failure rule and a role that does not restart as a gang.
func TestRestartPolicy(t *testing.T) {
	type want = decided
	exit := func(code int32, reason string, transient bool) musterv1.ExitStatus {
		e := musterv1.ExitStatus{Code: code, Reason: reason, CompletionCode: code}
		if transient {
			e.CompletionCode = -1000
			e.Attributes = []string{"Transient"}
		}
		return e
	}
	cases := map[string]struct {
		policy    musterv1.RestartPolicy
		succeeded bool
		exit      musterv1.ExitStatus
		want      want
	}{
		"Never, failure":                     {musterv1.RestartPolicyNever, false, exit(137, "Error", false), want{musterv1.ActionFailTask, false}},
		"Never, eviction":                    {musterv1.RestartPolicyNever, false, exit(0, "Evicted", true), want{musterv1.ActionFailTask, false}},
		"Never, success":                     {musterv1.RestartPolicyNever, true, exit(0, "", false), want{ActionSucceedTask, false}},
		"OnFailure, failure":                 {musterv1.RestartPolicyOnFailure, false, exit(1, "Error", false), want{musterv1.ActionRestartTask, true}},
		"OnFailure, eviction":                {musterv1.RestartPolicyOnFailure, false, exit(0, "Evicted", true), want{musterv1.ActionRestartTask, false}},
		"OnFailure, success":                 {musterv1.RestartPolicyOnFailure, true, exit(0, "", false), want{ActionSucceedTask, false}},
		"Always, success":                    {musterv1.RestartPolicyAlways, true, exit(0, "", false), want{musterv1.ActionRestartTask, true}},
		"Always, failure":                    {musterv1.RestartPolicyAlways, false, exit(2, "Error", false), want{musterv1.ActionRestartTask, true}},
		"ExitCode, SIGINT 130":               {musterv1.RestartPolicyExitCode, false, exit(130, "Error", false), want{musterv1.ActionRestartTask, true}},
		"ExitCode, SIGKILL 137":              {musterv1.RestartPolicyExitCode, false, exit(137, "Error", false), want{musterv1.ActionRestartTask, true}},
		"ExitCode, SIGUSR1 138":              {musterv1.RestartPolicyExitCode, false, exit(138, "Error", false), want{musterv1.ActionRestartTask, true}},
		"ExitCode, SIGTERM 143":              {musterv1.RestartPolicyExitCode, false, exit(143, "Error", false), want{musterv1.ActionRestartTask, true}},
		"ExitCode, OOMKilled":                {musterv1.RestartPolicyExitCode, false, exit(137, "OOMKilled", false), want{musterv1.ActionRestartTask, true}},
		"ExitCode, evicted":                  {musterv1.RestartPolicyExitCode, false, exit(0, "Evicted", true), want{musterv1.ActionRestartTask, false}},
		"ExitCode, exit 1 is permanent":      {musterv1.RestartPolicyExitCode, false, exit(1, "Error", false), want{ActionFailAttempt, false}},
		"ExitCode, exit 127 is permanent":    {musterv1.RestartPolicyExitCode, false, exit(127, "Error", false), want{ActionFailAttempt, false}},
		"ExitCode, SIGSEGV 139 is permanent": {musterv1.RestartPolicyExitCode, false, exit(139, "Error", false), want{ActionFailAttempt, false}},
		"ExitCode, success":                  {musterv1.RestartPolicyExitCode, true, exit(0, "", false), want{ActionSucceedTask, false}},
		"empty policy acts as ExitCode":      {"", false, exit(1, "Error", false), want{ActionFailAttempt, false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(Policy{Classify: true}, Role{Name: "w", RestartPolicy: tc.policy}, End{Pod: "p", Exit: tc.exit, Succeeded: tc.succeeded})
			if got := (want{d.Action, d.Accountable}); got != tc.want {
				t.Errorf("restartPolicy %s, succeeded %v, %+v: got %+v, want %+v", tc.policy, tc.succeeded, tc.exit, got, tc.want)
			}
		})
	}
}

func TestRestartPolicyWithoutClassification(t *testing.T) {
	evicted := musterv1.ExitStatus{CompletionCode: -1000, Reason: "Evicted", Attributes: []string{"Transient"}}
	decide := func(exit musterv1.ExitStatus) decided {
		d := Decide(Policy{}, Role{Name: "w", RestartPolicy: musterv1.RestartPolicyOnFailure}, End{Pod: "p", Exit: exit})
		return decided{d.Action, d.Accountable}
	}
	if got := decide(evicted); got != (decided{musterv1.ActionRestartTask, true}) {
		t.Errorf("without classification every restart counts, got %+v", got)
	}
	permanent := musterv1.ExitStatus{Code: 127, CompletionCode: -1203, Attributes: []string{"Permanent"}}
	if got := decide(permanent); got.Action != musterv1.ActionRestartTask {
		t.Errorf("without classification OnFailure retries a permanent failure, got %+v", got)
	}
}
