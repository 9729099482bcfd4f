package autoscale

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// randomConfig is a valid config, with optional fields often left zero.
func randomConfig(r *rand.Rand) Config {
	lo := 1 + r.Int32N(4)
	c := Config{MinReplicas: lo, MaxReplicas: lo + r.Int32N(12)}
	if r.IntN(2) == 0 {
		c.Step = 1 + r.Int32N(4)
	}
	if r.IntN(2) == 0 {
		c.SamplesPerSize = 1 + r.Int32N(5)
	}
	if r.IntN(2) == 0 {
		c.MinGain = 0.05 + 0.95*r.Float64()
	}
	if r.IntN(2) == 0 {
		c.SettleSeconds = new(r.Int32N(60))
	}
	return c
}

// randomSample is nil, junk, or a plausible rate that grows with n and
// flattens somewhere.
func randomSample(r *rand.Rand, n int32, knee float64) *float64 {
	var x float64
	switch r.IntN(12) {
	case 0:
		return nil
	case 1:
		x = math.NaN()
	case 2:
		x = math.Inf(1 - 2*r.IntN(2))
	case 3:
		x = -r.Float64() * 100
	case 4:
		x = 0
	default:
		x = 100 * min(float64(n), knee) * (0.8 + 0.4*r.Float64())
	}
	return &x
}

// TestDecideProperties drives Decide with random configs and a controller
// that mostly obeys it, against a cluster that mostly cooperates, and
// checks on every tick what must always hold.
func TestDecideProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 26))
	reasons := map[Reason]int{}
	resizes := 0
	for run := range 1000 {
		st, n := decideRun(t, r, randomConfig(r), randomSample, run, 200, func() bool { return false })
		reasons[st.Reason]++
		resizes += n
	}
	// The generator must reach every way of stopping, or the checks above
	// prove little.
	for _, want := range []Reason{ReasonNoGain, ReasonPendingPods, ReasonReachedMax, ReasonExternalScale, ReasonDisabled} {
		if reasons[want] == 0 {
			t.Errorf("no run ended with %s; ends: %v", want, reasons)
		}
	}
	if resizes == 0 {
		t.Error("no run resized")
	}
	t.Logf("ends: %v; %d resizes", reasons, resizes)
}

// sampler makes a tick's throughput sample at n running workers, or nil.
type sampler func(r *rand.Rand, n int32, knee float64) *float64

// decideRun plays one job for up to ticks ticks, or until done, with r
// choosing the cluster's behaviour, and checks every decision. It returns
// the last state and how many times Decide resized.
func decideRun(t *testing.T, r *rand.Rand, cfg Config, sample sampler, run, ticks int, done func() bool) (State, int) {
	t.Helper()
	d := cfg.Defaults()
	knee := 1 + 15*r.Float64()
	capacity := d.MinReplicas + r.Int32N(16)
	var spec int32
	if span := int64(d.MaxReplicas) - int64(d.MinReplicas) + 1; span >= 1 && span <= math.MaxInt32 {
		spec = d.MinReplicas + r.Int32N(int32(span))
	}
	if r.IntN(20) == 0 || spec < 0 {
		spec = r.Int32N(20) // sometimes outside the bounds
	}
	now := epoch
	var st State
	resizes := 0
	for tick := 0; tick < ticks && !done(); tick++ {
		now = now.Add(time.Duration(r.IntN(25)) * time.Second)
		if r.IntN(50) == 0 {
			now = now.Add(-time.Duration(r.IntN(100)) * time.Second) // a clock step back
		}
		if r.IntN(150) == 0 {
			spec = max(0, spec+r.Int32N(5)-2) // someone else scales the job
		}
		running, pending := min(spec, capacity), max(0, spec-capacity)
		if r.IntN(10) == 0 {
			running = max(0, running-1-r.Int32N(2)) // a worker restarting
		}
		if r.IntN(30) == 0 {
			pending++ // a pod briefly pending
		}
		obs := Observation{Now: now, SpecReplicas: spec, Running: running, Pending: pending, Sample: sample(r, running, knee)}

		before := st.clone()
		dec := Decide(cfg, st, obs)
		where := func() string {
			b, _ := json.Marshal(struct {
				Run, Tick int
				Cfg       Config
				State     State
				Obs       Observation
			}{run, tick, cfg, before, obs})
			return string(b)
		}
		checkDecision(t, d, before, obs, dec, where)
		if !reflect.DeepEqual(before, st) {
			t.Fatalf("Decide modified its input state (-before +after):\n%s\n%s", cmp.Diff(before, st), where())
		}
		if again := Decide(cfg, st, obs); !reflect.DeepEqual(dec, again) {
			t.Fatalf("Decide is not deterministic:\n%s", where())
		}
		st = dec.State
		if dec.Replicas != nil {
			spec = *dec.Replicas
			resizes++
		}
	}
	return st, resizes
}

func checkDecision(t *testing.T, cfg Config, before State, obs Observation, dec Decision, where func() string) {
	t.Helper()
	st := dec.State
	if dec.Replicas != nil {
		switch n := *dec.Replicas; {
		case n < cfg.MinReplicas || n > cfg.MaxReplicas:
			t.Fatalf("resize to %d outside [%d, %d]\n%s", n, cfg.MinReplicas, cfg.MaxReplicas, where())
		case n != st.Replicas:
			t.Fatalf("resize to %d, but the state says %d\n%s", n, st.Replicas, where())
		case n == obs.SpecReplicas:
			t.Fatalf("resize to the size the job already has (%d)\n%s", n, where())
		case before.Phase != PhaseExploring:
			t.Fatalf("resize from phase %q\n%s", before.Phase, where())
		case obs.Now.Unix()-before.ResizedAt < int64(*cfg.SettleSeconds):
			t.Fatalf("resize before the last one settled\n%s", where())
		case st.ResizedAt != obs.Now.Unix():
			t.Fatalf("resize not recorded at %d: %d\n%s", obs.Now.Unix(), st.ResizedAt, where())
		}
	}
	if before.Phase == PhaseStopped {
		if !reflect.DeepEqual(Decision{State: before}, dec) {
			t.Fatalf("a Stopped state changed:\n%s", where())
		}
		return
	}
	if (dec.Event != "") != (dec.Replicas != nil || st.Phase != before.Phase) {
		t.Fatalf("event %q with resize %v, phase %q to %q\n%s", dec.Event, dec.Replicas, before.Phase, st.Phase, where())
	}
	if st.Phase == PhaseExploring {
		if st.LastGood > st.Replicas || st.LastGood < cfg.MinReplicas || st.Replicas > cfg.MaxReplicas {
			t.Fatalf("exploring with LastGood %d, Replicas %d outside [%d, %d]\n%s",
				st.LastGood, st.Replicas, cfg.MinReplicas, cfg.MaxReplicas, where())
		}
	}
	if len(st.Sizes) > MaxSizes {
		t.Fatalf("%d sizes kept\n%s", len(st.Sizes), where())
	}
	for _, z := range st.Sizes {
		if int32(len(z.Samples)) > cfg.SamplesPerSize {
			t.Fatalf("%d samples kept at %d replicas\n%s", len(z.Samples), z.Replicas, where())
		}
		for _, x := range append([]float64{z.Throughput}, z.Samples...) {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				t.Fatalf("stored %v\n%s", x, where())
			}
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatalf("Marshal: %v\n%s", err, where())
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(st, back) {
		t.Fatalf("state does not survive JSON (%v): %s\n%s", err, b, where())
	}
}
