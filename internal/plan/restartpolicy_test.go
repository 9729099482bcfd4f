package plan

import (
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

func TestDecide(t *testing.T) {
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
		want      Judgment
	}{
		"Never, failure":                     {musterv1.RestartPolicyNever, false, exit(137, "Error", false), Judgment{Verdict: Complete}},
		"Never, eviction":                    {musterv1.RestartPolicyNever, false, exit(0, "Evicted", true), Judgment{Verdict: Complete}},
		"Never, success":                     {musterv1.RestartPolicyNever, true, exit(0, "", false), Judgment{Verdict: Complete}},
		"OnFailure, failure":                 {musterv1.RestartPolicyOnFailure, false, exit(1, "Error", false), Judgment{Verdict: Replace, Accountable: true}},
		"OnFailure, eviction":                {musterv1.RestartPolicyOnFailure, false, exit(0, "Evicted", true), Judgment{Verdict: Replace}},
		"OnFailure, success":                 {musterv1.RestartPolicyOnFailure, true, exit(0, "", false), Judgment{Verdict: Complete}},
		"Always, success":                    {musterv1.RestartPolicyAlways, true, exit(0, "", false), Judgment{Verdict: Replace, Accountable: true}},
		"Always, failure":                    {musterv1.RestartPolicyAlways, false, exit(2, "Error", false), Judgment{Verdict: Replace, Accountable: true}},
		"ExitCode, SIGINT 130":               {musterv1.RestartPolicyExitCode, false, exit(130, "Error", false), Judgment{Verdict: Replace, Accountable: true}},
		"ExitCode, SIGKILL 137":              {musterv1.RestartPolicyExitCode, false, exit(137, "Error", false), Judgment{Verdict: Replace, Accountable: true}},
		"ExitCode, SIGUSR1 138":              {musterv1.RestartPolicyExitCode, false, exit(138, "Error", false), Judgment{Verdict: Replace, Accountable: true}},
		"ExitCode, SIGTERM 143":              {musterv1.RestartPolicyExitCode, false, exit(143, "Error", false), Judgment{Verdict: Replace, Accountable: true}},
		"ExitCode, OOMKilled":                {musterv1.RestartPolicyExitCode, false, exit(137, "OOMKilled", false), Judgment{Verdict: Replace, Accountable: true}},
		"ExitCode, evicted":                  {musterv1.RestartPolicyExitCode, false, exit(0, "Evicted", true), Judgment{Verdict: Replace}},
		"ExitCode, exit 1 is permanent":      {musterv1.RestartPolicyExitCode, false, exit(1, "Error", false), Judgment{Verdict: FailJob}},
		"ExitCode, exit 127 is permanent":    {musterv1.RestartPolicyExitCode, false, exit(127, "Error", false), Judgment{Verdict: FailJob}},
		"ExitCode, SIGSEGV 139 is permanent": {musterv1.RestartPolicyExitCode, false, exit(139, "Error", false), Judgment{Verdict: FailJob}},
		"ExitCode, success":                  {musterv1.RestartPolicyExitCode, true, exit(0, "", false), Judgment{Verdict: Complete}},
		"empty policy acts as ExitCode":      {"", false, exit(1, "Error", false), Judgment{Verdict: FailJob}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Decide(tc.policy, tc.succeeded, tc.exit, true); got != tc.want {
				t.Errorf("Decide(%s, %v, %+v) = %+v, want %+v", tc.policy, tc.succeeded, tc.exit, got, tc.want)
			}
		})
	}
}

func TestDecideWithoutClassification(t *testing.T) {
	evicted := musterv1.ExitStatus{CompletionCode: -1000, Reason: "Evicted", Attributes: []string{"Transient"}}
	if got := Decide(musterv1.RestartPolicyOnFailure, false, evicted, false); got != (Judgment{Verdict: Replace, Accountable: true}) {
		t.Errorf("without classification every restart counts, got %+v", got)
	}
	permanent := musterv1.ExitStatus{Code: 127, CompletionCode: -1203, Attributes: []string{"Permanent"}}
	if got := Decide(musterv1.RestartPolicyOnFailure, false, permanent, false); got.Verdict != Replace {
		t.Errorf("without classification OnFailure retries a permanent failure, got %+v", got)
	}
}
