package failure

import "time"

// Default bounds of the delay before a job-level retry of a Transient,
// Conflict failure.
const (
	DefaultConflictDelayMin = 60 * time.Second
	DefaultConflictDelayMax = 900 * time.Second
)

// Rand is the random source JobRetryDelay draws from. *rand.Rand of
// math/rand/v2 is one.
type Rand interface {
	// Int64N returns a number in [0, n); n > 0.
	Int64N(n int64) int64
}

// DelayRange bounds a random delay, both ends included.
type DelayRange struct {
	Min, Max time.Duration
}

// JobRetryDelay is how long to wait before retrying the whole job after c.
// A Transient failure with Conflict (e.g. two gangs that could not both be
// placed) waits a random whole number of seconds within bounds, so that the
// jobs that collided do not all come back at once and collide again. Every
// other outcome, and every outcome when p does not classify failures, is
// retried at once. Task-level retries never wait: a single pod does not
// compete the way a whole gang does.
func JobRetryDelay(p RetryPolicy, c Completion, bounds DelayRange, rng Rand) time.Duration {
	if !p.ClassifyFailures || !c.Failed() || !c.Has(AttributeTransient) || !c.Has(AttributeConflict) {
		return 0
	}
	lo := max(int64(bounds.Min/time.Second), 0)
	hi := max(int64(bounds.Max/time.Second), lo)
	return time.Duration(lo+rng.Int64N(hi-lo+1)) * time.Second
}
