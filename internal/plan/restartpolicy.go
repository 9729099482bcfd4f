package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// Verdict is what happens to a task whose pod ended.
type Verdict string

const (
	// Complete: the task is finished for good, succeeded or failed.
	Complete Verdict = "Complete"
	// Replace: the task is restarted (its pod, or the whole job when the
	// role's restart scope is Job).
	Replace Verdict = "Replace"
	// FailJob: the failure is permanent and ends the whole job at once.
	FailJob Verdict = "FailJob"
)

// Judgment is the restart policy's verdict on one ended pod and whether a
// restart counts against the limits.
type Judgment struct {
	Verdict     Verdict
	Accountable bool
}

// retryableExitCodes are the exits of a process killed by a signal a retry
// can survive: SIGINT (130), SIGKILL (137), SIGUSR1 (138, "please retry")
// and SIGTERM (143).
var retryableExitCodes = map[int32]bool{130: true, 137: true, 138: true, 143: true}

// Decide applies a role's restart policy to an ended pod, refined by the
// failure's classification when classify is on:
//   - a Transient failure that the infrastructure caused (eviction,
//     preemption, node loss, a deleted pod, exit code 200/201, a user
//     rule) is restarted under every policy but Never, and does not count;
//   - a Permanent failure is not restarted under OnFailure or Always;
//   - under ExitCode, the retryable exits and OOM kills of capabilities
//     decision 1 are restarted whatever their class, and any other exit
//     that is not Transient fails the job at once.
func Decide(policy musterv1.RestartPolicy, succeeded bool, exit musterv1.ExitStatus, classify bool) Judgment {
	if succeeded {
		if policy == musterv1.RestartPolicyAlways {
			return Judgment{Verdict: Replace, Accountable: true}
		}
		return Judgment{Verdict: Complete}
	}
	transient := classify && exit.IsTransient()
	accountable := counts(exit, classify)
	switch policy {
	case musterv1.RestartPolicyNever:
		return Judgment{Verdict: Complete}
	case musterv1.RestartPolicyOnFailure, musterv1.RestartPolicyAlways:
		if classify && exit.IsPermanent() {
			return Judgment{Verdict: Complete}
		}
		return Judgment{Verdict: Replace, Accountable: accountable}
	default: // ExitCode, the default policy.
		switch {
		case retryableExitCodes[exit.Code] || exit.Reason == "OOMKilled":
			return Judgment{Verdict: Replace, Accountable: accountable}
		case transient:
			return Judgment{Verdict: Replace, Accountable: accountable}
		}
		return Judgment{Verdict: FailJob}
	}
}

// counts is whether restarting after a failure counts against the budget:
// always, but for a Transient failure the infrastructure caused, with
// classification on.
func counts(exit musterv1.ExitStatus, classify bool) bool {
	return !classify || !exit.IsTransient() || signalled(exit)
}

// signalled is whether a Transient class came only from the signal that
// killed the process. Such restarts still count: a process killed again
// and again must run out of restarts.
func signalled(exit musterv1.ExitStatus) bool {
	return exit.CompletionCode > 128 && exit.CompletionCode < 160
}
