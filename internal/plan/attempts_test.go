package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// decideRetry is spec.failurePolicy.retry's whole say over a finished
// attempt: a new attempt, counted or not, or the end with why it was not
// retried.
func TestDecideRetry(t *testing.T) {
	job := func(policy musterv1.RetryOn) *musterv1.TrainingJob {
		j := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).BackoffLimit(2).WithDefaults().Obj()
		if policy != "" {
			j.Spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: policy}
		}
		return j
	}
	failed := Outcome{Completion: musterv1.CompletionStatus{Reason: musterv1.ReasonPermanentExitCode, Message: "j-w-0 failed"}}
	succeeded := Outcome{Succeeded: true, Completion: musterv1.CompletionStatus{Reason: musterv1.ReasonAllTasksCompleted, Message: "all done"}}
	forGood := failed
	forGood.NoRetry = true
	type want struct {
		Retry, Accountable bool
		MessageSuffix      string
	}
	cases := map[string]struct {
		job      *musterv1.TrainingJob
		restarts int32
		retries  int32
		outcome  Outcome
		want     want
	}{
		"no retry policy: the job ends": {job: job(""), outcome: failed, want: want{}},
		"Never: the job ends":           {job: job(musterv1.RetryNever), outcome: failed, want: want{MessageSuffix: "; not retried: "}},
		"a final end is never retried":  {job: job(musterv1.RetryOnFailure), outcome: forGood, want: want{}},
		"a failure is retried and counts": {
			job: job(musterv1.RetryOnFailure), retries: 5, outcome: failed, want: want{Retry: true, Accountable: true},
		},
		"OnTransientFailure: a failure that is not transient is not retried": {
			job: job(musterv1.RetryOnTransientFailure), outcome: failed, want: want{MessageSuffix: "; not retried: "},
		},
		"Always: a success is retried, and counts": {
			job: job(musterv1.RetryAlways), outcome: succeeded, want: want{Retry: true, Accountable: true},
		},
		"out of restarts": {
			job: job(musterv1.RetryOnFailure), restarts: 2, outcome: failed,
			want: want{MessageSuffix: "; not retried: the job has used all 2 restarts of spec.failurePolicy.backoffLimit"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newContext(tc.job, time.Unix(1000, 0), nil, &musterv1.TrainingJobStatus{})
			st := &musterv1.TrainingJobStatus{Restarts: musterv1.RestartCounts{Total: tc.restarts, Accountable: tc.restarts},
				Retries: musterv1.RestartCounts{Total: tc.retries, Accountable: tc.retries}}
			d := decideRetry(c, st, tc.outcome)
			got := want{Retry: d.restart != nil}
			if d.restart != nil {
				got.Accountable = d.restart.accountable
				if !d.restart.retry || !strings.Contains(d.restart.message, tc.outcome.Completion.Message) {
					t.Errorf("a retry is a restart that says what it retries: %+v", d.restart)
				}
			}
			if rest, ok := strings.CutPrefix(d.outcome.Completion.Message, tc.outcome.Completion.Message); !ok {
				t.Errorf("message %q does not start with the outcome's", d.outcome.Completion.Message)
			} else if tc.want.MessageSuffix != "" && strings.HasPrefix(rest, tc.want.MessageSuffix) {
				got.MessageSuffix = tc.want.MessageSuffix
			} else {
				got.MessageSuffix = rest
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decideRetry (-want +got):\n%s", diff)
			}
		})
	}
}
