package failure

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	succeeded = mustPredefined(CodeSucceeded, "")
	transient = Completion{Code: -1000, Type: CompletionFailed, Attributes: []Attribute{AttributeTransient}}
	permanent = Completion{Code: 127, Type: CompletionFailed, Attributes: []Attribute{AttributePermanent}}
	unknown   = Completion{Code: 1, Type: CompletionFailed}
)

// retried is the part of a decision the algorithm fixes; Reason is prose.
type retried struct{ Retry, Accountable bool }

var (
	yes        = retried{Retry: true, Accountable: true}
	yesUncount = retried{Retry: true}
	no         = retried{Accountable: true}
)

// TestShouldRetryExamples is FrameworkController's RetryPolicy example
// table: each named policy against each kind of outcome.
func TestShouldRetryExamples(t *testing.T) {
	var (
		defaultPolicy = RetryPolicy{MaxRetries: 0}
		service       = RetryPolicy{Always: true}
		blindBatch    = RetryPolicy{MaxRetries: 10000}
		batchTaskFT   = RetryPolicy{MaxRetries: 3, ClassifyFailures: true}
		debugMode     = RetryPolicy{MaxRetries: 0, ClassifyFailures: true}
	)
	used := func(n int32) RetryStatus { return RetryStatus{Total: n + 5, Accountable: n} }
	cases := map[string]struct {
		p    RetryPolicy
		s    RetryStatus
		c    Completion
		want retried
	}{
		"DEFAULT: success":   {defaultPolicy, used(0), succeeded, no},
		"DEFAULT: transient": {defaultPolicy, used(0), transient, no},
		"DEFAULT: permanent": {defaultPolicy, used(0), permanent, no},
		"DEFAULT: unknown":   {defaultPolicy, used(0), unknown, no},

		"Service: success":                                {service, used(100), succeeded, yes},
		"Service: transient is counted":                   {service, used(100), transient, yes},
		"Service: permanent":                              {service, used(100), permanent, yes},
		"Service: unknown":                                {service, used(100), unknown, yes},
		"Service: stop is never retried":                  {service, used(0), mustPredefined(CodeStopRequested, ""), no},
		"Service with classification: permanent is final": {RetryPolicy{Always: true, ClassifyFailures: true}, used(0), permanent, no},

		"Blind Batch: success":   {blindBatch, used(100), succeeded, no},
		"Blind Batch: transient": {blindBatch, used(100), transient, yes},
		"Blind Batch: permanent": {blindBatch, used(100), permanent, yes},
		"Blind Batch: unknown":   {blindBatch, used(100), unknown, yes},

		"Batch with Task FT: success":                          {batchTaskFT, used(0), succeeded, no},
		"Batch with Task FT: transient, budget spent":          {batchTaskFT, used(3), transient, yesUncount},
		"Batch with Task FT: transient conflict":               {batchTaskFT, used(3), mustPredefined(201, ""), yesUncount},
		"Batch with Task FT: permanent":                        {batchTaskFT, used(0), permanent, no},
		"Batch with Task FT: unknown, first retry":             {batchTaskFT, used(0), unknown, yes},
		"Batch with Task FT: unknown, third retry":             {batchTaskFT, used(2), unknown, yes},
		"Batch with Task FT: unknown, budget spent":            {batchTaskFT, used(3), unknown, no},
		"Batch with Task FT: scale-down is never retried":      {batchTaskFT, used(0), mustPredefined(CodeScaleDownDeletion, ""), no},
		"Batch with Task FT: attempt completion never retried": {batchTaskFT, used(0), mustPredefined(CodeAttemptCompletion, ""), no},

		"Debug Mode: success":   {debugMode, used(0), succeeded, no},
		"Debug Mode: transient": {debugMode, used(0), transient, yesUncount},
		"Debug Mode: permanent": {debugMode, used(0), permanent, no},
		"Debug Mode: unknown":   {debugMode, used(0), unknown, no},

		"built-in codes win over classification": {RetryPolicy{Always: true, ClassifyFailures: true}, used(0),
			Completion{Code: CodeStopRequested, Type: CompletionFailed, Attributes: []Attribute{AttributeTransient}}, no},
		"N retries: one left":                                {RetryPolicy{MaxRetries: 2}, used(1), unknown, yes},
		"N retries: transient counts without classification": {RetryPolicy{MaxRetries: 2}, used(1), transient, yes},
		"N retries: none left":                               {RetryPolicy{MaxRetries: 2}, used(2), transient, no},
		"N retries: overspent":                               {RetryPolicy{MaxRetries: 2}, used(5), unknown, no},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := ShouldRetry(tc.p, tc.s, tc.c)
			if diff := cmp.Diff(tc.want, retried{d.Retry, d.Accountable}); diff != "" {
				t.Errorf("ShouldRetry(%+v, %+v, %d) (-want +got):\n%s", tc.p, tc.s, tc.c.Code, diff)
			}
			if d.Reason == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestShouldRetryReasons(t *testing.T) {
	cases := map[string]struct {
		p    RetryPolicy
		s    RetryStatus
		c    Completion
		want string
	}{
		"stop":      {RetryPolicy{Always: true}, RetryStatus{}, mustPredefined(CodeStopRequested, ""), "a stop was requested; never retried"},
		"transient": {RetryPolicy{ClassifyFailures: true}, RetryStatus{}, transient, "transient failure; retried without counting"},
		"counted":   {RetryPolicy{MaxRetries: 3}, RetryStatus{Accountable: 1}, unknown, "retry 2 of 3"},
		"spent":     {RetryPolicy{MaxRetries: 3}, RetryStatus{Accountable: 3}, unknown, "no retries left: 3 of 3 used"},
		"disabled":  {RetryPolicy{}, RetryStatus{}, unknown, "no retries left: 0 of 0 used"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ShouldRetry(tc.p, tc.s, tc.c).Reason; got != tc.want {
				t.Errorf("Reason = %q, want %q", got, tc.want)
			}
		})
	}
}
