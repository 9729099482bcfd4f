package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/autoscale"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestAutoscalerStatusRoundTrip(t *testing.T) {
	st := autoscale.State{Phase: autoscale.PhaseExploring, Reason: autoscale.ReasonScaledUp, Message: "m",
		Replicas: 3, LastGood: 2, ResizedAt: 1700000000,
		Sizes: []autoscale.SizeStats{{Replicas: 2, Samples: []float64{100.5, 99.25}, Throughput: 99.875}}}
	if diff := cmp.Diff(st, stateOf(statusOf(st))); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got := stateOf(nil); got.Phase != "" {
		t.Errorf("no status is a fresh start, got %+v", got)
	}
}

func TestAutoscalerConfig(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("worker", 2).Elastic(1, 6).Obj()
	job.Spec.Scaling.Autoscaling = musterv1.AutoscalingPolicy{MinGainPercent: 30, Step: 2}
	want := autoscale.Config{MinReplicas: 1, MaxReplicas: 6, Step: 2, SamplesPerSize: 3, MinGain: 0.3, SettleSeconds: 30}
	if diff := cmp.Diff(want, configOf(job)); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}
