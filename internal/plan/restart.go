package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// Verdict is what happens to a task whose pod ended.
type Verdict string

const (
	// Complete: the task is finished for good, succeeded or failed.
	Complete Verdict = "Complete"
	// Replace: the pod is deleted and a new one made for the task.
	Replace Verdict = "Replace"
	// FailJob: the failure is permanent and ends the whole job at once.
	FailJob Verdict = "FailJob"
)

// Decision is the verdict on one ended pod and whether a replacement counts
// against the backoff limit.
type Decision struct {
	Verdict     Verdict
	Accountable bool
}

// retryableExitCodes are the exits of a process killed by a signal a retry
// can survive: SIGINT (130), SIGKILL (137), SIGUSR1 (138, "please retry")
// and SIGTERM (143).
var retryableExitCodes = map[int32]bool{130: true, 137: true, 138: true, 143: true}

// retryableReasons are the reasons the ExitCode policy retries whatever the
// exit code: the memory limit or the infrastructure ended the pod.
var retryableReasons = map[string]bool{"OOMKilled": true}

// Decide applies a role's restart policy to an ended pod. succeeded is
// whether the pod exited 0.
func Decide(policy musterv1.RestartPolicy, succeeded bool, exit musterv1.ExitStatus) Decision {
	if succeeded {
		if policy == musterv1.RestartPolicyAlways {
			return Decision{Verdict: Replace, Accountable: true}
		}
		return Decision{Verdict: Complete}
	}
	switch policy {
	case musterv1.RestartPolicyNever:
		return Decision{Verdict: Complete}
	case musterv1.RestartPolicyOnFailure, musterv1.RestartPolicyAlways:
		return Decision{Verdict: Replace, Accountable: !exit.Transient}
	default: // ExitCode, the default policy.
		if exit.Transient {
			return Decision{Verdict: Replace}
		}
		if retryableExitCodes[exit.Code] || retryableReasons[exit.Reason] {
			return Decision{Verdict: Replace, Accountable: true}
		}
		return Decision{Verdict: FailJob}
	}
}
