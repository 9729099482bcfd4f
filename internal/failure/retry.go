package failure

import (
	"fmt"
	"math"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// RetryPolicy says which ended attempts are retried.
type RetryPolicy struct {
	// MaxRetries is the number of accountable retries allowed; 0 never
	// retries.
	MaxRetries int32
	// Always retries every ended attempt, even a successful one: a service
	// that must keep running.
	Always bool
	// ClassifyFailures lets the failure's attributes decide first:
	// Transient failures are retried without being counted, Permanent ones
	// are never retried, and unknown ones fall to MaxRetries.
	ClassifyFailures bool
}

// RetryPolicyOf is spec.failurePolicy.retry in the terms of ShouldRetry;
// classify is whether classification is enabled. The count of retries has
// no limit of its own: a counted retry is charged to the job's one budget.
//   - unset or Never: nothing is retried;
//   - OnTransientFailure: Transient failures only, and not counted;
//   - OnFailure (the default): every failure while the budget lasts;
//   - Always: every end, a success too.
func RetryPolicyOf(r *musterv1.RetryPolicy, classify bool) RetryPolicy {
	if r == nil {
		return RetryPolicy{}
	}
	switch r.Policy {
	case musterv1.RetryNever:
		return RetryPolicy{}
	case musterv1.RetryOnTransientFailure:
		return RetryPolicy{ClassifyFailures: classify}
	case musterv1.RetryAlways:
		return RetryPolicy{Always: true, ClassifyFailures: classify}
	}
	return RetryPolicy{MaxRetries: math.MaxInt32, ClassifyFailures: classify}
}

// RetryStatus counts the retries made so far.
type RetryStatus struct {
	// Total counts every retry; it is the current attempt's number.
	Total int32
	// Accountable counts the retries compared with MaxRetries.
	Accountable int32
}

// RetryDecision is whether an ended attempt is retried.
type RetryDecision struct {
	Retry bool
	// Accountable is false only for a Transient failure retried under
	// ClassifyFailures: that retry adds to Total but not to Accountable.
	Accountable bool
	// Reason says why, for events and status.
	Reason string
}

// neverRetried are the outcomes the operator makes on purpose. Retrying
// them would undo the decision that produced them.
var neverRetried = map[int32]string{
	CodeStopRequested:     "a stop was requested",
	CodeAttemptCompletion: "the attempt was completed by its completion policy",
	CodeScaleDownDeletion: "the task was removed by a scale-down",
}

// ShouldRetry decides whether the attempt that ended with c is retried,
// given the retries made so far. In order: the operator's own outcomes
// (stop, attempt completion, scale-down) are never retried; with
// ClassifyFailures a Transient failure is retried uncounted and a Permanent
// one never; then Always retries anything, a success is not retried, and
// otherwise a failure is retried while s.Accountable < p.MaxRetries.
func ShouldRetry(p RetryPolicy, s RetryStatus, c Completion) RetryDecision {
	if why, ok := neverRetried[c.Code]; ok {
		return RetryDecision{Accountable: true, Reason: why + "; never retried"}
	}
	if p.ClassifyFailures && c.Failed() {
		switch {
		case c.Has(AttributeTransient):
			return RetryDecision{Retry: true, Reason: "transient failure; retried without counting"}
		case c.Has(AttributePermanent):
			return RetryDecision{Accountable: true, Reason: "permanent failure; never retried"}
		}
	}
	switch {
	case p.Always:
		return RetryDecision{Retry: true, Accountable: true, Reason: "every attempt is retried"}
	case !c.Failed():
		return RetryDecision{Accountable: true, Reason: "succeeded"}
	case p.MaxRetries == math.MaxInt32:
		// No cap of its own: the job's budget bounds it.
		return RetryDecision{Retry: true, Accountable: true, Reason: fmt.Sprintf("retry %d", s.Accountable+1)}
	case s.Accountable < p.MaxRetries:
		return RetryDecision{Retry: true, Accountable: true,
			Reason: fmt.Sprintf("retry %d of %d", s.Accountable+1, p.MaxRetries)}
	default:
		return RetryDecision{Accountable: true,
			Reason: fmt.Sprintf("no retries left: %d of %d used", s.Accountable, max(p.MaxRetries, 0))}
	}
}
