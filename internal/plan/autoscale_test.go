package plan

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/autoscale"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestAutoscalerStatusRoundTrip(t *testing.T) {
	st := autoscale.State{Phase: autoscale.PhaseExploring, Reason: autoscale.ReasonScaledUp, Message: "m",
		Replicas: 3, LastGood: 2, ResizedAt: 1700000000,
		Sizes: []autoscale.SizeStats{{Replicas: 2, Samples: []float64{100.5, 99.25}, Throughput: 99.875}}}
	if diff := cmp.Diff(st, StateOf(StatusOf(st))); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got := StateOf(nil); got.Phase != "" {
		t.Errorf("no status is a fresh start, got %+v", got)
	}
}

func TestAutoscalerConfig(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("worker", 2).Elastic(1, 6).Obj()
	job.Spec.Scaling.Autoscaling = musterv1.AutoscalingPolicy{MinGainPercent: 30, Step: 2}
	want := autoscale.Config{MinReplicas: 1, MaxReplicas: 6, Step: 2, SamplesPerSize: 3, MinGain: 0.3, SettleSeconds: new(int32(30))}
	if diff := cmp.Diff(want, AutoscaleConfig(job)); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

// The autoscaler is a step of the plan: its decision is in the status the
// plan returns, and a resize is an action carried out after that status is
// written. An operator that dies in between makes the resize again instead
// of taking the old size for someone else's.
func TestAutoscaleStepRecordsBeforeResizing(t *testing.T) {
	job := testutil.MakeJob("a", "ns").UID("a").Role("worker", 1).Elastic(1, 3).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
	job.Spec.Runtime.PyTorch.Elastic.Rendezvous.Store = musterv1.StoreWorker
	job.Spec.Scaling.Autoscaling = musterv1.AutoscalingPolicy{
		Metric: musterv1.ThroughputMetric{LogRegex: "x=([0-9]+)"}, SamplesPerSize: 1, SettleSeconds: new(int32(1)), IntervalSeconds: 5}
	w := newWorld(t, job)
	w.runAll()
	w.runEverything()
	if a := w.job.Status.Autoscaler; a == nil || a.Phase != "Exploring" || a.Replicas != 1 {
		t.Fatalf("started at 1: %+v", a)
	}
	since, due := SampleDue(w.job, w.now)
	if !due || !since.Equal(w.now.Add(-5*time.Second)) { // never sampled: the last interval
		t.Fatalf("a first sample is due: %v %v", since, due)
	}
	w.now = w.now.Add(2 * time.Second) // settled
	sample := &Throughput{Value: new(100.0), At: w.now}
	res := Plan(Input{Job: w.job.DeepCopy(), Pods: w.podList(), HasService: true, Now: w.now, Throughput: sample})
	if res.Scale == nil || *res.Scale != 2 {
		t.Fatalf("one step up: scale %v autoscaler %+v", res.Scale, res.Status.Autoscaler)
	}
	a := res.Status.Autoscaler
	if a.Replicas != 2 || a.ResizedFrom != 1 || a.SampledAt == nil || !a.SampledAt.Time.Equal(w.now) || a.LastSample != "100" {
		t.Fatalf("the decision is in status before the resize: %+v", a)
	}
	if _, due := SampleDue(&musterv1.TrainingJob{Spec: w.job.Spec, Status: res.Status}, w.now.Add(4*time.Second)); due {
		t.Fatal("the next sample waits out the interval")
	}
	// The status was written, the resize was not: the next plan resizes
	// again, and does not stop as if someone else had scaled.
	w.job.Status = res.Status
	again := Plan(Input{Job: w.job.DeepCopy(), Pods: w.podList(), HasService: true, Now: w.now.Add(time.Second)})
	if again.Scale == nil || *again.Scale != 2 || again.Status.Autoscaler.Phase != "Exploring" {
		t.Fatalf("the recorded resize is made again: scale %v autoscaler %+v", again.Scale, again.Status.Autoscaler)
	}
	// Someone else scales to 3: the autoscaler stops and never fights.
	w.job.Spec.Scaling.Replicas = new(int32(3))
	other := Plan(Input{Job: w.job.DeepCopy(), Pods: w.podList(), HasService: true, Now: w.now.Add(2 * time.Second)})
	if other.Scale != nil || other.Status.Autoscaler.Reason != "ExternalScale" {
		t.Fatalf("an external scale stops it: scale %v autoscaler %+v", other.Scale, other.Status.Autoscaler)
	}
}

// The last sample is what the newest read found, kept through reads that
// find none, whether or not the autoscaler counted it.
func TestLastSample(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prev := &musterv1.AutoscalerStatus{LastSample: "400", LastSampleAt: new(metav1.NewTime(at))}
	later := at.Add(10 * time.Second)
	cases := map[string]struct {
		prev   *musterv1.AutoscalerStatus
		sample *Throughput
		want   string
		wantAt *time.Time
	}{
		"a read that found one":   {prev, &Throughput{Value: new(412.25), At: later}, "412.25", &later},
		"a read that found none":  {prev, &Throughput{At: later}, "400", &at},
		"no read":                 {prev, nil, "400", &at},
		"an infinite one":         {prev, &Throughput{Value: new(math.Inf(1)), At: later}, "400", &at},
		"nothing read ever":       {nil, nil, "", nil},
		"the first read, nothing": {nil, &Throughput{At: later}, "", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, gotAt := lastSample(tc.prev, tc.sample)
			if got != tc.want || (gotAt == nil) != (tc.wantAt == nil) || (gotAt != nil && !gotAt.Time.Equal(*tc.wantAt)) {
				t.Errorf("lastSample = %q at %v, want %q at %v", got, gotAt, tc.want, tc.wantAt)
			}
		})
	}
}
