package autoscale

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/muster-dev/muster/internal/testutil"
)

// FuzzDecide is TestDecideProperties with the fuzzer choosing: the config
// (a valid one like the test's, or one with any field at an edge: zero,
// negative, near the top of int32, NaN), the cluster's behaviour and the
// samples, which include the extremes of float64. It checks the same
// properties on every tick: never outside [min, max], never resize an
// unsettled or stopped exploration, state that survives JSON, no mutation
// of the input, determinism. The run lasts as long as the input does.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Add([]byte("\x00\x10\x80\xff\x40\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("\xff\x07\x07\x05\x00\x00\x01\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, src := testutil.FuzzRand(data)
		// The first byte's lowest bit chooses a valid or an edge config.
		var (
			cfg    Config
			sample sampler
		)
		if r.IntN(2) == 0 {
			cfg, sample = randomConfig(r), randomSample
		} else {
			cfg, sample = edgeConfig(r), edgeSample
		}
		decideRun(t, r, cfg, sample, 0, 400, src.Exhausted)
	})
}

// edgeInts are the int32 values where bounds and sums go wrong.
var edgeInts = []int32{0, 1, 2, 3, -1, math.MinInt32, math.MaxInt32, math.MaxInt32 - 1, 10000, 10001}

func edgeInt(r *rand.Rand) int32 {
	if r.IntN(2) == 0 {
		return r.Int32N(20)
	}
	return edgeInts[r.IntN(len(edgeInts))]
}

// edgeConfig is any config, valid or not, with fields at their edges.
func edgeConfig(r *rand.Rand) Config {
	gains := []float64{math.NaN(), 0, -1, math.SmallestNonzeroFloat64, 0.5, 1, math.Nextafter(1, 2), math.Inf(1)}
	c := Config{MinReplicas: edgeInt(r), MaxReplicas: edgeInt(r), Step: edgeInt(r), SamplesPerSize: edgeInt(r),
		MinGain: gains[r.IntN(len(gains))]}
	if r.IntN(2) == 0 {
		c.SettleSeconds = new(edgeInt(r))
	}
	return c
}

// edgeSample is randomSample or a float64 at an edge: the largest and
// smallest finite values, -0, and values whose sum or difference
// overflows.
func edgeSample(r *rand.Rand, n int32, knee float64) *float64 {
	edges := []float64{math.MaxFloat64, math.MaxFloat64 / 2, math.SmallestNonzeroFloat64, math.Copysign(0, -1), 1e308, 1e-308}
	if i := r.IntN(len(edges) + 4); i < len(edges) {
		return new(edges[i])
	}
	return randomSample(r, n, knee)
}
