package autoscale

import (
	"slices"
	"time"
)

// Phase is whether the autoscaler is still at work.
type Phase string

const (
	// PhaseExploring: measuring the current size, or waiting for it to
	// settle; it may resize again.
	PhaseExploring Phase = "Exploring"
	// PhaseStopped: done. Decide never changes a Stopped state nor resizes
	// from it; to explore again, the caller starts over from a zero State.
	PhaseStopped Phase = "Stopped"
)

// Reason is why the state is what it is: the last thing that happened.
type Reason string

const (
	// ReasonStarted: exploring the size the job was created (or found) at.
	ReasonStarted Reason = "Started"
	// ReasonScaledUp: the autoscaler added workers and is measuring them.
	ReasonScaledUp Reason = "ScaledUp"
	// ReasonNoGain: the last scale-up did not pay off; reverted to the
	// last good size.
	ReasonNoGain Reason = "NoGain"
	// ReasonPendingPods: pods stayed pending once the size had settled;
	// reverted to the last good size if above it.
	ReasonPendingPods Reason = "PendingPods"
	// ReasonReachedMax: the size is maxReplicas and it paid off (or the job
	// started there).
	ReasonReachedMax Reason = "ReachedMax"
	// ReasonExternalScale: someone else changed the job's replicas; the
	// autoscaler does not fight them.
	ReasonExternalScale Reason = "ExternalScale"
	// ReasonDisabled: the config is invalid, or the job's replicas lie
	// outside it.
	ReasonDisabled Reason = "Disabled"
)

// State is what the autoscaler remembers between ticks. The caller keeps
// it in the job's status and hands it back unchanged; the zero State means
// "not started". It holds only JSON-safe values: samples and throughputs
// are finite (Decide never stores NaN or ±Inf) and time is unix seconds.
type State struct {
	Phase   Phase  `json:"phase,omitempty"`
	Reason  Reason `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Replicas is the size the autoscaler last asked for (or found at
	// start). While Exploring, the job's replicas must equal it.
	Replicas int32 `json:"replicas,omitempty"`
	// LastGood is the largest size known to pay off: the starting size, or
	// the last one whose scale-up paid off. While Exploring, LastGood ≤
	// Replicas.
	LastGood int32 `json:"lastGood,omitempty"`
	// ResizedAt is when Replicas last changed (or the autoscaler started),
	// in unix seconds. The size settles SettleSeconds later.
	ResizedAt int64 `json:"resizedAt,omitempty"`
	// Sizes are the sizes explored, oldest first, at most MaxSizes.
	Sizes []SizeStats `json:"sizes,omitempty"`
}

// SizeStats is what was measured at one size.
type SizeStats struct {
	Replicas int32 `json:"replicas"`
	// Samples are the first valid samples taken once the size had settled,
	// at most SamplesPerSize, in samples/s for the whole job.
	Samples []float64 `json:"samples,omitempty"`
	// Throughput is the median of Samples (0 without samples). The median,
	// not the mean: with a few samples, one taken during a checkpoint, an
	// evaluation pass or a straggler's hiccup would drag a mean far off,
	// and it is the steady rate a size sustains that matters.
	Throughput float64 `json:"throughput,omitempty"`
}

// Observation is what the caller saw this tick.
type Observation struct {
	// Now is the time of the tick.
	Now time.Time
	// SpecReplicas is the elastic role's size in the job's spec now.
	SpecReplicas int32
	// Running and Pending count the elastic role's pods in those phases.
	// Pending should count pods that cannot start (e.g. unschedulable):
	// pending pods stop the exploration.
	Running, Pending int32
	// Sample is a throughput sample (samples/s for the whole job) taken
	// since the last tick, or nil.
	Sample *float64
}

// Decision is what Decide concluded.
type Decision struct {
	// State is the new state, for the caller to persist.
	State State
	// Replicas, when not nil, is the size to set the job's replicas to.
	// The caller should apply it before persisting State: a State whose
	// Replicas the job does not have reads as an external scale.
	Replicas *int32
	// Event is a one-line message for a Kubernetes event when the
	// autoscaler started, resized or stopped; "" otherwise.
	Event string
}

// median of xs, which it does not modify; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	// Halves first: the sum of two huge finite values would overflow.
	return s[m-1]/2 + s[m]/2
}
