package autoscale

import (
	"testing"
	"time"
)

// epoch is the time of the first tick in every test.
var epoch = time.Unix(1_700_000_000, 0)

// at is sec seconds after epoch.
func at(sec int) time.Time { return epoch.Add(time.Duration(sec) * time.Second) }

func ptr[T any](v T) *T { return &v }

// transition is a tick at which Decide reported an event: the part of the
// decision the rules fix (the message is prose).
type transition struct {
	Sec      int
	Phase    Phase
	Reason   Reason
	Replicas int32 // State.Replicas
	Resize   bool  // Decision.Replicas was set (to State.Replicas)
}

// job is a recorded run: the job's starting size, how many pods the
// cluster can run, and the throughput samples its metrics endpoint
// reported at each size, one per tick from the tick the size was set,
// re-forming world included. The sample of the tick that resized the job
// was the old size's, so a resized size's first sample is never reported.
// A size whose samples ran out reports none.
type job struct {
	start    int32
	capacity int32 // 0: room for every pod
	samples  map[int32][]float64
}

// simulate plays a controller that ticks every 10 s for ticks ticks,
// applying every resize at once, and returns the transitions and the last
// state. It fails the test if a resize does not match the state.
func simulate(t *testing.T, cfg Config, j job, ticks int) ([]transition, State) {
	t.Helper()
	var (
		st    State
		trace []transition
		spec  = j.start
		next  = map[int32]int{} // samples consumed per size since it was set
	)
	for i := range ticks {
		sec := 10 * i
		running, pending := spec, int32(0)
		if j.capacity > 0 && spec > j.capacity {
			running, pending = j.capacity, spec-j.capacity
		}
		obs := Observation{Now: at(sec), SpecReplicas: spec, Running: running, Pending: pending}
		if k := next[spec]; k < len(j.samples[spec]) {
			obs.Sample = ptr(j.samples[spec][k])
			next[spec]++
		}
		d := Decide(cfg, st, obs)
		st = d.State
		if d.Replicas != nil {
			if *d.Replicas != st.Replicas {
				t.Fatalf("t=%d: resize to %d but state says %d", sec, *d.Replicas, st.Replicas)
			}
			spec = *d.Replicas
			next[spec] = 1
		}
		if d.Event != "" {
			trace = append(trace, transition{sec, st.Phase, st.Reason, st.Replicas, d.Replicas != nil})
		}
	}
	return trace, st
}
