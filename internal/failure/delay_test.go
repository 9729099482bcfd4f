package failure

import (
	"math/rand/v2"
	"testing"
	"time"
)

// fixedRand returns pick, clamped into [0, n), and remembers n.
type fixedRand struct {
	pick int64
	n    int64
}

func (r *fixedRand) Int64N(n int64) int64 {
	r.n = n
	return min(r.pick, n-1)
}

func TestJobRetryDelay(t *testing.T) {
	classify := RetryPolicy{MaxRetries: 3, ClassifyFailures: true}
	conflict := mustPredefined(CodeContainerTransientConflictFailed, "")
	defaults := DelayRange{DefaultConflictDelayMin, DefaultConflictDelayMax}
	cases := map[string]struct {
		p      RetryPolicy
		c      Completion
		bounds DelayRange
		pick   int64
		want   time.Duration
		wantN  int64 // the size of the range drawn from; 0 if no draw
	}{
		"lowest":                        {classify, conflict, defaults, 0, 60 * time.Second, 841},
		"highest":                       {classify, conflict, defaults, 1 << 40, 900 * time.Second, 841},
		"in between":                    {classify, conflict, defaults, 40, 100 * time.Second, 841},
		"transient without conflict":    {classify, transient, defaults, 5, 0, 0},
		"conflict needs classification": {RetryPolicy{MaxRetries: 3}, conflict, defaults, 5, 0, 0},
		"unknown":                       {classify, unknown, defaults, 5, 0, 0},
		"a success is never delayed":    {classify, Completion{Type: CompletionSucceeded, Attributes: []Attribute{AttributeTransient, AttributeConflict}}, defaults, 5, 0, 0},
		"equal bounds":                  {classify, conflict, DelayRange{30 * time.Second, 30 * time.Second}, 0, 30 * time.Second, 1},
		"max below min acts as min":     {classify, conflict, DelayRange{30 * time.Second, 10 * time.Second}, 0, 30 * time.Second, 1},
		"negative min acts as zero":     {classify, conflict, DelayRange{-5 * time.Second, 2 * time.Second}, 0, 0, 3},
		"whole seconds, fractions cut":  {classify, conflict, DelayRange{1500 * time.Millisecond, 2900 * time.Millisecond}, 1, 2 * time.Second, 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rng := &fixedRand{pick: tc.pick}
			if got := JobRetryDelay(tc.p, tc.c, tc.bounds, rng); got != tc.want {
				t.Errorf("JobRetryDelay = %v, want %v", got, tc.want)
			}
			if rng.n != tc.wantN {
				t.Errorf("drew from [0, %d), want [0, %d)", rng.n, tc.wantN)
			}
		})
	}
}

// TestJobRetryDelayWithStdRand checks that math/rand/v2 is a Rand and that
// its draws stay within bounds.
func TestJobRetryDelayWithStdRand(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := RetryPolicy{ClassifyFailures: true}
	c := mustPredefined(CodeContainerTransientConflictFailed, "")
	for range 1000 {
		d := JobRetryDelay(p, c, DelayRange{DefaultConflictDelayMin, DefaultConflictDelayMax}, rng)
		if d < DefaultConflictDelayMin || d > DefaultConflictDelayMax || d%time.Second != 0 {
			t.Fatalf("delay %v outside [%v, %v] or not whole seconds", d, DefaultConflictDelayMin, DefaultConflictDelayMax)
		}
	}
}
