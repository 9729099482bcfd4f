package autoscale

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestDecideStep checks single ticks against each rule of the package doc.
func TestDecideStep(t *testing.T) {
	cfg := Config{MinReplicas: 2, MaxReplicas: 8}
	// exploring4 measures 4 replicas, scaled up from a good 3, at epoch.
	exploring4 := State{
		Phase: PhaseExploring, Reason: ReasonScaledUp, Replicas: 4, LastGood: 3, ResizedAt: epoch.Unix(),
		Sizes: []SizeStats{{3, []float64{300, 300, 300}, 300}, {4, []float64{390, 410}, 400}},
	}
	with := func(st State, f func(*State)) State {
		st = st.clone()
		f(&st)
		return st
	}
	obs := func(sec int, spec, running, pending int32, sample *float64) Observation {
		return Observation{Now: at(sec), SpecReplicas: spec, Running: running, Pending: pending, Sample: sample}
	}
	cases := map[string]struct {
		cfg       Config
		st        State
		obs       Observation
		want      State
		wantSize  *int32
		wantEvent bool
	}{
		"rule 0: Stopped is final": {
			cfg: cfg, st: with(exploring4, func(s *State) { s.Phase, s.Reason = PhaseStopped, ReasonNoGain }),
			obs:  obs(100, 6, 0, 6, ptr(1.0)),
			want: with(exploring4, func(s *State) { s.Phase, s.Reason = PhaseStopped, ReasonNoGain }),
		},
		"rule 0: Stopped is final even with an invalid config": {
			cfg: Config{}, st: State{Phase: PhaseStopped, Reason: ReasonPendingPods, Replicas: 3, LastGood: 3},
			obs:  obs(100, 3, 3, 0, ptr(1.0)),
			want: State{Phase: PhaseStopped, Reason: ReasonPendingPods, Replicas: 3, LastGood: 3},
		},
		"rule 1: an invalid config stops an exploration without resizing": {
			cfg: Config{MinReplicas: 2, MaxReplicas: 8, MinGain: 2}, st: exploring4,
			obs:       obs(100, 4, 4, 0, ptr(400.0)),
			want:      with(exploring4, func(s *State) { s.Phase, s.Reason = PhaseStopped, ReasonDisabled }),
			wantEvent: true,
		},
		"rule 2: start at the job's size; pending pods and samples wait for it to settle": {
			cfg: cfg, st: State{},
			obs: obs(0, 3, 1, 2, ptr(100.0)),
			want: State{
				Phase: PhaseExploring, Reason: ReasonStarted, Replicas: 3, LastGood: 3, ResizedAt: epoch.Unix(),
				Sizes: []SizeStats{{Replicas: 3}},
			},
			wantEvent: true,
		},
		"rule 2: an unknown phase starts over": {
			cfg: cfg, st: with(exploring4, func(s *State) { s.Phase = "Confused" }),
			obs: obs(100, 5, 5, 0, nil),
			want: State{
				Phase: PhaseExploring, Reason: ReasonStarted, Replicas: 5, LastGood: 5, ResizedAt: at(100).Unix(),
				Sizes: []SizeStats{{Replicas: 5}},
			},
			wantEvent: true,
		},
		"rule 2: min = max is max": {
			cfg: Config{MinReplicas: 4, MaxReplicas: 4}, st: State{},
			obs:       obs(0, 4, 4, 0, nil),
			want:      State{Phase: PhaseStopped, Reason: ReasonReachedMax, Replicas: 4, LastGood: 4, ResizedAt: epoch.Unix()},
			wantEvent: true,
		},
		"rule 2: above max is disabled, not clamped": {
			cfg: cfg, st: State{},
			obs:       obs(0, 9, 9, 0, nil),
			want:      State{Phase: PhaseStopped, Reason: ReasonDisabled, Replicas: 9, LastGood: 9, ResizedAt: epoch.Unix()},
			wantEvent: true,
		},
		"rule 3: an external scale-up stops it": {
			cfg: cfg, st: exploring4,
			obs:       obs(100, 6, 4, 2, ptr(400.0)),
			want:      with(exploring4, func(s *State) { s.Phase, s.Reason = PhaseStopped, ReasonExternalScale }),
			wantEvent: true,
		},
		"rule 3: so does an external scale-down, even while settling": {
			cfg: cfg, st: exploring4,
			obs:       obs(5, 2, 4, 0, nil),
			want:      with(exploring4, func(s *State) { s.Phase, s.Reason = PhaseStopped, ReasonExternalScale }),
			wantEvent: true,
		},
		"rule 4: a sample 29 s after the resize is ignored": {
			cfg: cfg, st: exploring4,
			obs:  obs(29, 4, 4, 0, ptr(400.0)),
			want: exploring4,
		},
		"rule 4: pending pods while settling are ignored": {
			cfg: cfg, st: exploring4,
			obs:  obs(29, 4, 2, 2, nil),
			want: exploring4,
		},
		"rule 4: a clock behind the resize is not settled": {
			cfg: cfg, st: exploring4,
			obs:  obs(-100, 4, 4, 0, ptr(400.0)),
			want: exploring4,
		},
		"rule 4: a shorter settle window": {
			cfg: Config{MinReplicas: 2, MaxReplicas: 8, SettleSeconds: new(int32(5))}, st: exploring4,
			obs:       obs(5, 4, 4, 0, ptr(400.0)),
			want:      with(exploring4, judged(4, 5, 400)),
			wantSize:  ptr[int32](5),
			wantEvent: true,
		},
		"rule 5: pending pods above the last good size revert to it": {
			cfg: cfg, st: exploring4,
			obs: obs(30, 4, 3, 1, ptr(400.0)),
			want: with(exploring4, func(s *State) {
				s.Phase, s.Reason, s.Replicas, s.ResizedAt = PhaseStopped, ReasonPendingPods, 3, at(30).Unix()
			}),
			wantSize:  ptr[int32](3),
			wantEvent: true,
		},
		"rule 5: pending pods at the starting size stop without resizing": {
			cfg: cfg, st: State{Phase: PhaseExploring, Reason: ReasonStarted, Replicas: 3, LastGood: 3, ResizedAt: epoch.Unix(), Sizes: []SizeStats{{Replicas: 3}}},
			obs:       obs(30, 3, 2, 1, nil),
			want:      State{Phase: PhaseStopped, Reason: ReasonPendingPods, Replicas: 3, LastGood: 3, ResizedAt: epoch.Unix(), Sizes: []SizeStats{{Replicas: 3}}},
			wantEvent: true,
		},
		"rule 5: a revert is clamped into raised bounds": {
			cfg: Config{MinReplicas: 4, MaxReplicas: 8}, st: with(exploring4, func(s *State) {
				s.Replicas, s.LastGood, s.Sizes = 5, 3, []SizeStats{{3, []float64{300, 300, 300}, 300}, {Replicas: 5}}
			}),
			obs: obs(30, 5, 4, 1, nil),
			want: State{
				Phase: PhaseStopped, Reason: ReasonPendingPods, Replicas: 4, LastGood: 3, ResizedAt: at(30).Unix(),
				Sizes: []SizeStats{{3, []float64{300, 300, 300}, 300}, {Replicas: 5}},
			},
			wantSize:  ptr[int32](4),
			wantEvent: true,
		},
		"rule 5: a revert that clamps to the current size resizes nothing": {
			cfg: Config{MinReplicas: 4, MaxReplicas: 8}, st: exploring4,
			obs:       obs(30, 4, 3, 1, nil),
			want:      with(exploring4, func(s *State) { s.Phase, s.Reason = PhaseStopped, ReasonPendingPods }),
			wantEvent: true,
		},
		"rule 6: a sample with too few workers running is ignored": {
			cfg: cfg, st: exploring4,
			obs:  obs(30, 4, 3, 0, ptr(400.0)),
			want: exploring4,
		},
		"rule 6: so is one with too many": {
			cfg: cfg, st: exploring4,
			obs:  obs(30, 4, 5, 0, ptr(400.0)),
			want: exploring4,
		},
		"rule 6: a sample short of k is kept, without an event": {
			cfg: Config{MinReplicas: 2, MaxReplicas: 8, SamplesPerSize: 4}, st: exploring4,
			obs: obs(30, 4, 4, 0, ptr(500.0)),
			want: with(exploring4, func(s *State) {
				s.Sizes[1] = SizeStats{4, []float64{390, 410, 500}, 410}
			}),
		},
		"rule 7: the k-th sample judges the size": {
			cfg: cfg, st: exploring4,
			obs:       obs(30, 4, 4, 0, ptr(400.0)),
			want:      with(exploring4, judged(4, 30, 400)),
			wantSize:  ptr[int32](5),
			wantEvent: true,
		},
		"rule 7: a size whose last good stats were lost counts as the first": {
			cfg: cfg, st: with(exploring4, func(s *State) { s.Sizes = s.Sizes[1:] }),
			obs: obs(30, 4, 4, 0, ptr(100.0)),
			want: State{
				Phase: PhaseExploring, Reason: ReasonScaledUp, Replicas: 5, LastGood: 4, ResizedAt: at(30).Unix(),
				Sizes: []SizeStats{{4, []float64{390, 410, 100}, 390}, {Replicas: 5}},
			},
			wantSize:  ptr[int32](5),
			wantEvent: true,
		},
		"rule 8: max lowered below the current size stops without resizing": {
			cfg: Config{MinReplicas: 2, MaxReplicas: 3}, st: exploring4,
			obs: obs(30, 4, 4, 0, ptr(400.0)),
			want: with(exploring4, func(s *State) {
				s.Phase, s.Reason, s.LastGood = PhaseStopped, ReasonReachedMax, 4
				s.Sizes[1] = SizeStats{4, []float64{390, 410, 400}, 400}
			}),
			wantEvent: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.cfg, tc.st, tc.obs)
			if diff := cmp.Diff(tc.want, d.State, cmpopts.IgnoreFields(State{}, "Message")); diff != "" {
				t.Errorf("State (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSize, d.Replicas); diff != "" {
				t.Errorf("Replicas (-want +got):\n%s", diff)
			}
			if got := d.Event != ""; got != tc.wantEvent {
				t.Errorf("Event = %q, want an event: %v", d.Event, tc.wantEvent)
			}
			if d.Event != "" && d.Event != d.State.Message {
				t.Errorf("Event %q differs from Message %q", d.Event, d.State.Message)
			}
		})
	}
}

// judged is exploring4 after its third sample x paid off at sec: 4 becomes
// good and 5 is explored.
func judged(n int32, sec int, x float64) func(*State) {
	return func(s *State) {
		s.Reason, s.Replicas, s.LastGood, s.ResizedAt = ReasonScaledUp, n+1, n, at(sec).Unix()
		s.Sizes[1] = SizeStats{n, []float64{390, 410, x}, median([]float64{390, 410, x})}
		s.Sizes = append(s.Sizes, SizeStats{Replicas: n + 1})
	}
}
