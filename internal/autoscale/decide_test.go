package autoscale

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// settling is what a size reports while its world re-forms: the first
// three ticks (0, 10, 20 s after the resize) fall within the default 30 s
// settle window and must be ignored, so they are deliberately absurd.
var settling = []float64{1, 1e9, 5}

// recorded is settling followed by the samples that count.
func recorded(counted ...float64) []float64 {
	return append(append([]float64(nil), settling...), counted...)
}

func TestDecideRecordedRuns(t *testing.T) {
	base := Config{MinReplicas: 1, MaxReplicas: 8}
	cases := map[string]struct {
		cfg          Config
		job          job
		want         []transition
		wantLastGood int32
		wantSizes    []SizeStats
		ticks        int // 0: 30
	}{
		"linear to 4 workers, then flat: explore 2, 3, 4, 5 and go back to 4": {
			cfg: base,
			job: job{start: 2, samples: map[int32][]float64{
				2: recorded(200, 198, 203),
				3: recorded(301, 297, 305),
				4: recorded(398, 402, 400),
				5: recorded(405, 399, 401),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{50, PhaseExploring, ReasonScaledUp, 3, true},
				{100, PhaseExploring, ReasonScaledUp, 4, true},
				{150, PhaseExploring, ReasonScaledUp, 5, true},
				{200, PhaseStopped, ReasonNoGain, 4, true},
			},
			wantLastGood: 4,
			wantSizes: []SizeStats{
				{2, []float64{200, 198, 203}, 200},
				{3, []float64{301, 297, 305}, 301},
				{4, []float64{398, 402, 400}, 400},
				{5, []float64{405, 399, 401}, 401},
			},
		},
		"linear all the way: stop at max without resizing": {
			cfg: Config{MinReplicas: 1, MaxReplicas: 4},
			job: job{start: 2, samples: map[int32][]float64{
				2: recorded(200, 200, 200),
				3: recorded(300, 300, 300),
				4: recorded(400, 400, 400),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{50, PhaseExploring, ReasonScaledUp, 3, true},
				{100, PhaseExploring, ReasonScaledUp, 4, true},
				{150, PhaseStopped, ReasonReachedMax, 4, false},
			},
			wantLastGood: 4,
		},
		"step 3 is clamped to max (KubeDL doubles past it)": {
			cfg: Config{MinReplicas: 2, MaxReplicas: 7, Step: 3},
			job: job{start: 2, samples: map[int32][]float64{
				2: recorded(200, 200, 200),
				5: recorded(500, 500, 500),
				7: recorded(700, 700, 700),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{50, PhaseExploring, ReasonScaledUp, 5, true},
				{100, PhaseExploring, ReasonScaledUp, 7, true},
				{150, PhaseStopped, ReasonReachedMax, 7, false},
			},
			wantLastGood: 7,
		},
		"exactly MinGain pays off; just below it does not": {
			// 2 workers at 200: the average worker brings 100, so the 3rd
			// must bring at least 50 (250 pays), the 4th at least
			// 0.5 × 250/3 = 41.67 (291 does not).
			cfg: base,
			job: job{start: 2, samples: map[int32][]float64{
				2: recorded(200, 200, 200),
				3: recorded(250, 250, 250),
				4: recorded(291, 291, 291),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{50, PhaseExploring, ReasonScaledUp, 3, true},
				{100, PhaseExploring, ReasonScaledUp, 4, true},
				{150, PhaseStopped, ReasonNoGain, 3, true},
			},
			wantLastGood: 3,
		},
		"throughput falls when a worker is added": {
			cfg: base,
			job: job{start: 1, samples: map[int32][]float64{
				1: recorded(100, 100, 100),
				2: recorded(80, 90, 85),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 1, false},
				{50, PhaseExploring, ReasonScaledUp, 2, true},
				{100, PhaseStopped, ReasonNoGain, 1, true},
			},
			wantLastGood: 1,
		},
		"the median ignores one outlier per size": {
			// Means would be 200, 233 (gain 33 < 50: NoGain); medians are
			// 200 and 300.
			cfg: base,
			job: job{start: 2, samples: map[int32][]float64{
				2: recorded(200, 200, 200),
				3: recorded(300, 100, 300),
				4: recorded(400, 400, 1),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{50, PhaseExploring, ReasonScaledUp, 3, true},
				{100, PhaseExploring, ReasonScaledUp, 4, true},
				{150, PhaseExploring, ReasonScaledUp, 5, true},
			},
			wantLastGood: 4,
		},
		"pending pods after a scale-up: revert to the last good size": {
			cfg: base,
			job: job{start: 2, capacity: 3, samples: map[int32][]float64{
				2: recorded(200, 200, 200),
				3: recorded(300, 300, 300),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{50, PhaseExploring, ReasonScaledUp, 3, true},
				{100, PhaseExploring, ReasonScaledUp, 4, true},
				// Pending from 100 s, but only acted on once settled.
				{130, PhaseStopped, ReasonPendingPods, 3, true},
			},
			wantLastGood: 3,
		},
		"pending pods at the starting size: stop, resize nothing": {
			cfg:  base,
			job:  job{start: 4, capacity: 3, samples: map[int32][]float64{4: recorded(300, 300, 300)}},
			want: []transition{{0, PhaseExploring, ReasonStarted, 4, false}, {30, PhaseStopped, ReasonPendingPods, 4, false}},
			// Nothing was measured: the world never had 4 workers running.
			wantLastGood: 4,
		},
		"no samples: wait at the starting size": {
			cfg:          base,
			job:          job{start: 2},
			want:         []transition{{0, PhaseExploring, ReasonStarted, 2, false}},
			wantLastGood: 2,
		},
		"invalid samples are skipped, not counted": {
			cfg: base,
			job: job{start: 2, samples: map[int32][]float64{
				2: recorded(math.NaN(), 200, 0, math.Inf(1), -3, 200, math.Inf(-1), 200),
				3: recorded(210, 210, 210),
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{100, PhaseExploring, ReasonScaledUp, 3, true},
				{150, PhaseStopped, ReasonNoGain, 2, true},
			},
			wantLastGood: 2,
			wantSizes:    []SizeStats{{2, []float64{200, 200, 200}, 200}, {3, []float64{210, 210, 210}, 210}},
		},
		"starting at max: nothing to explore": {
			cfg:          Config{MinReplicas: 1, MaxReplicas: 4},
			job:          job{start: 4},
			want:         []transition{{0, PhaseStopped, ReasonReachedMax, 4, false}},
			wantLastGood: 4,
		},
		"starting outside the bounds: disabled": {
			cfg:          Config{MinReplicas: 2, MaxReplicas: 4},
			job:          job{start: 1},
			want:         []transition{{0, PhaseStopped, ReasonDisabled, 1, false}},
			wantLastGood: 1,
		},
		"invalid config: disabled": {
			cfg:          Config{MinReplicas: 4, MaxReplicas: 2},
			job:          job{start: 3},
			want:         []transition{{0, PhaseStopped, ReasonDisabled, 3, false}},
			wantLastGood: 3,
		},
		"a longer settle window ignores more ticks": {
			cfg: Config{MinReplicas: 1, MaxReplicas: 8, SettleSeconds: new(int32(50)), SamplesPerSize: 2},
			job: job{start: 2, samples: map[int32][]float64{
				2: {1, 1, 1, 1, 1, 200, 200},
				3: {1, 1, 1, 1, 1, 250, 260},
			}},
			want: []transition{
				{0, PhaseExploring, ReasonStarted, 2, false},
				{60, PhaseExploring, ReasonScaledUp, 3, true},
				{120, PhaseExploring, ReasonScaledUp, 4, true},
			},
			wantLastGood: 3,
		},
		"history keeps the newest sizes": {
			cfg: Config{MinReplicas: 1, MaxReplicas: 20},
			job: job{start: 1, samples: func() map[int32][]float64 {
				m := map[int32][]float64{}
				for n := range int32(12) {
					m[n+1] = recorded(float64(100*(n+1)), float64(100*(n+1)), float64(100*(n+1)))
				}
				return m
			}()},
			ticks:        62,
			wantLastGood: 12,
			wantSizes: []SizeStats{
				{6, []float64{600, 600, 600}, 600},
				{7, []float64{700, 700, 700}, 700},
				{8, []float64{800, 800, 800}, 800},
				{9, []float64{900, 900, 900}, 900},
				{10, []float64{1000, 1000, 1000}, 1000},
				{11, []float64{1100, 1100, 1100}, 1100},
				{12, []float64{1200, 1200, 1200}, 1200},
				{13, nil, 0},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ticks := tc.ticks
			if ticks == 0 {
				ticks = 30
			}
			trace, st := simulate(t, tc.cfg, tc.job, ticks)
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, trace); diff != "" {
					t.Errorf("transitions (-want +got):\n%s", diff)
				}
			}
			if st.LastGood != tc.wantLastGood {
				t.Errorf("LastGood = %d, want %d", st.LastGood, tc.wantLastGood)
			}
			if tc.wantSizes != nil {
				if diff := cmp.Diff(tc.wantSizes, st.Sizes); diff != "" {
					t.Errorf("Sizes (-want +got):\n%s", diff)
				}
			}
		})
	}
}
