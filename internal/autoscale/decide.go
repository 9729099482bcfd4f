package autoscale

import (
	"fmt"
	"math"
	"time"
)

// Decide is one tick of the autoscaler: given the config, the state it
// returned last time (the zero State at first) and what the caller
// observed, it returns the new state and whether to resize. It is a
// deterministic function of its arguments and does not modify st. The
// rules are in the package doc.
func Decide(cfg Config, st State, obs Observation) Decision {
	switch st.Phase {
	case PhaseStopped:
		return Decision{State: st}
	case PhaseExploring:
		st = st.clone()
	default:
		st = State{}
	}
	cfg = cfg.Defaults()
	if errs := cfg.Validate(nil); len(errs) > 0 {
		if st.Phase == "" {
			st.Replicas, st.LastGood = obs.SpecReplicas, obs.SpecReplicas
		}
		return stop(st, ReasonDisabled, "autoscaling disabled: invalid config: "+errs.ToAggregate().Error())
	}
	switch {
	case st.Phase == "":
		return start(cfg, obs)
	case obs.SpecReplicas != st.Replicas:
		return stop(st, ReasonExternalScale, fmt.Sprintf(
			"autoscaling stopped: replicas changed from %d to %d outside the autoscaler", st.Replicas, obs.SpecReplicas))
	case !settled(cfg, st, obs.Now):
		return Decision{State: st}
	case obs.Pending > 0:
		return revert(cfg, st, obs.Now, ReasonPendingPods,
			fmt.Sprintf("%d pods pending at %d replicas", obs.Pending, st.Replicas))
	}
	return observe(cfg, st, obs)
}

// start explores from the job's current size.
func start(cfg Config, obs Observation) Decision {
	n := obs.SpecReplicas
	st := State{Replicas: n, LastGood: n, ResizedAt: obs.Now.Unix()}
	switch {
	case n < cfg.MinReplicas || n > cfg.MaxReplicas:
		return stop(st, ReasonDisabled, fmt.Sprintf(
			"autoscaling disabled: %d replicas lie outside [%d, %d]", n, cfg.MinReplicas, cfg.MaxReplicas))
	case n == cfg.MaxReplicas:
		return stop(st, ReasonReachedMax, fmt.Sprintf(
			"autoscaling stopped: the job already has maxReplicas (%d)", n))
	}
	st.Phase, st.Reason = PhaseExploring, ReasonStarted
	st.Sizes = []SizeStats{{Replicas: n}}
	st.Message = fmt.Sprintf("autoscaling started at %d replicas", n)
	return Decision{State: st, Event: st.Message}
}

// settled reports whether SettleSeconds have passed since the last resize,
// counted in whole unix seconds.
func settled(cfg Config, st State, now time.Time) bool {
	return now.Unix()-st.ResizedAt >= int64(*cfg.SettleSeconds)
}

// validSample reports whether x can be a throughput: finite and positive.
func validSample(x float64) bool {
	return x > 0 && !math.IsInf(x, 1)
}

// observe records a sample at the current size and judges the size once it
// has enough.
func observe(cfg Config, st State, obs Observation) Decision {
	// A sample is the whole job's rate; it belongs to this size only when
	// exactly this many workers are running.
	if obs.Sample == nil || !validSample(*obs.Sample) || obs.Running != st.Replicas {
		return Decision{State: st}
	}
	if len(st.Sizes) == 0 || st.Sizes[len(st.Sizes)-1].Replicas != st.Replicas {
		st.Sizes = appendSize(st.Sizes, st.Replicas)
	}
	cur := &st.Sizes[len(st.Sizes)-1]
	if int32(len(cur.Samples)) < cfg.SamplesPerSize {
		cur.Samples = append(cur.Samples, *obs.Sample)
		cur.Throughput = median(cur.Samples)
	}
	if int32(len(cur.Samples)) < cfg.SamplesPerSize {
		st.Message = fmt.Sprintf("measuring %d replicas: %d/%d samples", st.Replicas, len(cur.Samples), cfg.SamplesPerSize)
		return Decision{State: st}
	}
	return judge(cfg, st, obs.Now)
}

// judge decides on a fully measured current size: grow from the first
// size; past it, grow while each added worker pays off, else revert.
func judge(cfg Config, st State, now time.Time) Decision {
	cur := st.Sizes[len(st.Sizes)-1]
	prev, ok := st.size(st.LastGood)
	// The first size has nothing to compare with. So has a state whose
	// LastGood was lost or edited, which Decide itself never produces;
	// it restarts from here.
	if st.Replicas == st.LastGood || !ok || len(prev.Samples) == 0 || prev.Replicas >= cur.Replicas {
		st.LastGood = st.Replicas
		return scaleUp(cfg, st, now, fmt.Sprintf("%d replicas gave %.1f samples/s", cur.Replicas, cur.Throughput))
	}
	added := float64(cur.Replicas - prev.Replicas)
	gain := (cur.Throughput - prev.Throughput) / added
	need := cfg.MinGain * prev.Throughput / float64(prev.Replicas)
	why := fmt.Sprintf("%d replicas gave %.1f samples/s, %d gave %.1f: %.1f per added worker, at least %.1f needed",
		prev.Replicas, prev.Throughput, cur.Replicas, cur.Throughput, gain, need)
	if gain >= need {
		st.LastGood = st.Replicas
		return scaleUp(cfg, st, now, why)
	}
	return revert(cfg, st, now, ReasonNoGain, why)
}

// scaleUp adds Step workers, clamped to the bounds, or stops at the top.
func scaleUp(cfg Config, st State, now time.Time, why string) Decision {
	next := clamp(int64(st.Replicas)+int64(cfg.Step), cfg)
	if next <= st.Replicas {
		return stop(st, ReasonReachedMax, fmt.Sprintf("autoscaling stopped at maxReplicas (%d): %s", st.Replicas, why))
	}
	msg := fmt.Sprintf("scaling up from %d to %d replicas: %s", st.Replicas, next, why)
	st.Sizes = appendSize(st.Sizes, next)
	st.Replicas, st.ResizedAt = next, now.Unix()
	st.Phase, st.Reason, st.Message = PhaseExploring, ReasonScaledUp, msg
	return Decision{State: st, Replicas: &next, Event: msg}
}

// revert stops at LastGood (clamped to the bounds), resizing if the job is
// elsewhere.
func revert(cfg Config, st State, now time.Time, reason Reason, why string) Decision {
	target := clamp(int64(st.LastGood), cfg)
	if target == st.Replicas {
		return stop(st, reason, fmt.Sprintf("autoscaling stopped at %d replicas: %s", target, why))
	}
	msg := fmt.Sprintf("autoscaling stopped, reverting from %d to %d replicas: %s", st.Replicas, target, why)
	st.Replicas, st.ResizedAt = target, now.Unix()
	d := stop(st, reason, msg)
	d.Replicas = &target
	return d
}

// stop ends the exploration without resizing.
func stop(st State, reason Reason, msg string) Decision {
	st.Phase, st.Reason, st.Message = PhaseStopped, reason, msg
	return Decision{State: st, Event: msg}
}

// clamp puts n within [MinReplicas, MaxReplicas]. n is wide so that a sum
// near the top of int32 cannot wrap.
func clamp(n int64, cfg Config) int32 {
	return int32(min(max(n, int64(cfg.MinReplicas)), int64(cfg.MaxReplicas)))
}

// appendSize starts a new size, forgetting the oldest beyond MaxSizes.
func appendSize(sizes []SizeStats, n int32) []SizeStats {
	sizes = append(sizes, SizeStats{Replicas: n})
	if len(sizes) > MaxSizes {
		sizes = sizes[len(sizes)-MaxSizes:]
	}
	return sizes
}

// size finds the newest stats of n replicas.
func (s State) size(n int32) (SizeStats, bool) {
	for i := len(s.Sizes) - 1; i >= 0; i-- {
		if s.Sizes[i].Replicas == n {
			return s.Sizes[i], true
		}
	}
	return SizeStats{}, false
}

// clone copies s deeply, so that the returned state shares no memory with
// the caller's.
func (s State) clone() State {
	if s.Sizes == nil {
		return s
	}
	sizes := make([]SizeStats, len(s.Sizes))
	for i, z := range s.Sizes {
		z.Samples = append([]float64(nil), z.Samples...)
		sizes[i] = z
	}
	s.Sizes = sizes
	return s
}
