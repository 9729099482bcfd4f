package main

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/tools/devcluster"
)

func TestStatIsTheMedianWithMinAndMax(t *testing.T) {
	runs := func(secs ...float64) []*side {
		out := make([]*side, len(secs))
		for i, s := range secs {
			out[i] = &side{all: time.Duration(s * float64(time.Second))}
		}
		return out
	}
	all := func(d *side) float64 { return d.all.Seconds() }
	for _, tc := range []struct {
		secs []float64
		want stat
		cell string
	}{
		{[]float64{3, 1, 2, 5, 4}, stat{med: 3, lo: 1, hi: 5, n: 5}, "3.00 s (1.00 s-5.00 s)"},
		// Of an even number, the lower of the middle two.
		{[]float64{4, 1, 3, 2}, stat{med: 2, lo: 1, hi: 4, n: 4}, "2.00 s (1.00 s-4.00 s)"},
		{[]float64{7}, stat{med: 7, lo: 7, hi: 7, n: 1}, "7.00 s"},
		{nil, stat{}, "-"},
	} {
		got := statOf(runs(tc.secs...), all)
		if got != tc.want {
			t.Errorf("statOf(%v) = %+v, want %+v", tc.secs, got, tc.want)
		}
		if c := got.cell(fSecs); c != tc.cell {
			t.Errorf("cell of %v = %q, want %q", tc.secs, c, tc.cell)
		}
	}
}

func TestEveryKindLeadsOneRunInTurn(t *testing.T) {
	kinds := []sideKind{sideMuster, sideF0, sideF1}
	var firsts []sideKind
	for r := range len(kinds) {
		order := turned(kinds, r)
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, slices.Sorted(slices.Values(kinds))) {
			t.Fatalf("run %d measures %v, not each of %v once", r, order, kinds)
		}
		firsts = append(firsts, order[0])
	}
	if !slices.Equal(firsts, kinds) {
		t.Errorf("the runs start with %v, want each kind once: %v", firsts, kinds)
	}
}

func TestATaskIsTheSameWhateverItsPodsName(t *testing.T) {
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	muster := pod("job-0003-worker-2", map[string]string{jobLabel: "job-0003"})
	job := pod("job-0003-2-x7k2p", map[string]string{jobLabel: "job-0003", jobIndexLabel: "2"})
	if taskOf(muster) != taskKey("job-0003", 2) || taskOf(job) != taskOf(muster) {
		t.Errorf("tasks %q and %q, want both %q", taskOf(muster), taskOf(job), taskKey("job-0003", 2))
	}
	// F1n's second pod of the task, made from Muster's pod.
	f := &floor{floorArgs: floorArgs{kind: sideF1n, floorPods: floorPodsSame}}
	again := f.pod(floorJob("ns", "job-0003", 4), 2, 1)
	if again.Name != "job-0003-worker-2-a1" || again.Spec.Hostname != "job-0003-worker-2" || taskOf(again) != taskOf(muster) {
		t.Errorf("F1n's second pod %s (hostname %s) runs task %q, want job-0003-worker-2-a1 (job-0003-worker-2) running %q",
			again.Name, again.Spec.Hostname, taskOf(again), taskOf(muster))
	}
}

func TestF1sServesMustersSchemaUnderItsOwnGroup(t *testing.T) {
	root, err := devcluster.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	crd, err := musterSchemaElsewhere(root)
	if err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Group != f1sResource.Group || crd.Name != "trainingjobs."+f1sResource.Group || crd.Spec.Conversion != nil {
		t.Errorf("group %q, name %q, conversion %v: want Muster's CRD under %s, without its webhook", crd.Spec.Group, crd.Name, crd.Spec.Conversion, f1sResource.Group)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != f1sResource.Version || !crd.Spec.Versions[0].Storage ||
		crd.Spec.Versions[0].Schema == nil {
		t.Errorf("versions %+v: want %s alone, stored, with its schema", crd.Spec.Versions, f1sResource.Version)
	}
}

// A histogram's percentile is read from its buckets, summed over the
// series the labels pick, linearly within the bucket it falls in, as
// Prometheus reads it; past the last finite bound, that bound.
func TestQuantileReadsTheHistogramsBuckets(t *testing.T) {
	c := counters{
		`d_bucket{action="create",le="0.1"}`:  40,
		`d_bucket{action="create",le="0.2"}`:  90,
		`d_bucket{action="create",le="+Inf"}`: 100,
		`d_bucket{action="delete",le="0.1"}`:  0,
		`d_bucket{action="delete",le="0.2"}`:  0,
		`d_bucket{action="delete",le="+Inf"}`: 100,
		`d_sum{action="create"}`:              12,
		`d_count{action="create"}`:            100,
	}
	for _, tc := range []struct {
		q      float64
		labels []string
		want   time.Duration
	}{
		{0.2, []string{`action="create"`}, 50 * time.Millisecond},
		{0.65, []string{`action="create"`}, 150 * time.Millisecond},
		{0.99, []string{`action="create"`}, 200 * time.Millisecond},
		{0.5, nil, 200 * time.Millisecond},
	} {
		got, ok := c.quantile("d", tc.q, tc.labels...)
		if !ok || got != tc.want {
			t.Errorf("quantile(%v, %v) = %v, %v; want %v", tc.q, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := c.quantile("e", 0.5); ok {
		t.Error("a histogram never scraped has no quantile")
	}
	if got := c.meanCell("d", `action="create"`); got != "120 ms (p99 200 ms)" {
		t.Errorf("meanCell = %q", got)
	}
}

// The burst measures its floors, or those -floors leaves, and F1n only
// when -floors names it.
func TestTheBurstMeasuresF1nOnlyWhenAskedFor(t *testing.T) {
	for _, tc := range []struct {
		floors []sideKind
		want   []sideKind
	}{
		{nil, []sideKind{sideMuster, sideF0, sideF1, sideF1s, sideF2}},
		{[]sideKind{sideF1}, []sideKind{sideMuster, sideF1}},
		{[]sideKind{sideF1, sideF1n}, []sideKind{sideMuster, sideF1, sideF1n}},
	} {
		runs, err := scenarios(options{burst: "250x4", runs: 3, floors: tc.floors})
		if err != nil {
			t.Fatal(err)
		}
		if got := runs[0].kinds; !slices.Equal(got, tc.want) {
			t.Errorf("-floors %v: the burst measures %v, want %v", tc.floors, got, tc.want)
		}
	}
}
