package autoscale

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMedian(t *testing.T) {
	cases := map[string]struct {
		xs   []float64
		want float64
	}{
		"none":                    {nil, 0},
		"one":                     {[]float64{7}, 7},
		"odd, unsorted":           {[]float64{300, 100, 200}, 200},
		"even: mean of the pair":  {[]float64{4, 1, 3, 2}, 2.5},
		"huge values do not wrap": {[]float64{math.MaxFloat64, math.MaxFloat64}, math.MaxFloat64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			if got := median(tc.xs); got != tc.want {
				t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
			}
			if diff := cmp.Diff(in, tc.xs); diff != "" {
				t.Errorf("median modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestStateJSONRoundTrip(t *testing.T) {
	_, explored := simulate(t, Config{MinReplicas: 1, MaxReplicas: 8}, job{start: 2, samples: map[int32][]float64{
		2: recorded(200.25, 198, 203.125),
		3: recorded(1.0/3, 2.0/3, 1e-300),
		4: recorded(math.MaxFloat64, math.SmallestNonzeroFloat64),
	}}, 30)
	cases := map[string]State{
		"zero":     {},
		"explored": explored,
		"stopped": {
			Phase: PhaseStopped, Reason: ReasonExternalScale, Message: "replicas changed from 4 to 6 — by someone else",
			Replicas: 4, LastGood: 3, ResizedAt: -1,
		},
	}
	for name, st := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			var got State
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("Unmarshal %s: %v", b, err)
			}
			if diff := cmp.Diff(st, got); diff != "" {
				t.Errorf("round trip through %s (-want +got):\n%s", b, diff)
			}
		})
	}
}

func TestStateJSONFieldNames(t *testing.T) {
	st := State{
		Phase: PhaseExploring, Reason: ReasonScaledUp, Message: "m", Replicas: 3, LastGood: 2, ResizedAt: 1700000000,
		Sizes: []SizeStats{{Replicas: 2, Samples: []float64{200}, Throughput: 200}, {Replicas: 3}},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"phase":"Exploring","reason":"ScaledUp","message":"m","replicas":3,"lastGood":2,"resizedAt":1700000000,` +
		`"sizes":[{"replicas":2,"samples":[200],"throughput":200},{"replicas":3}]}`
	if string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
}
