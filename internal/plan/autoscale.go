package plan

import (
	"cmp"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/autoscale"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/text"
)

// Throughput is a sample of a job's training throughput that the
// controller read before planning.
type Throughput struct {
	// Value is samples per second for the whole job, or nil when none of
	// the pods reported one.
	Value *float64
	// At is when it was read.
	At time.Time
}

// autoscaleStep is the throughput autoscaler's step of the plan: its state is
// status.autoscaler, its decision is written with the rest of the status,
// and a resize is an action (Result.Scale) carried out after that write, so
// a decision is on record before it takes effect.
func autoscaleStep(c *planContext, st *musterv1.TrainingJobStatus, sample *Throughput, out *Result) {
	if !topology.Autoscales(c.job) {
		st.Autoscaler = nil
		return
	}
	prev := st.Autoscaler
	state := StateOf(prev)
	spec := ptr.Deref(c.job.Spec.Scaling.Replicas, 0)
	if prev != nil && prev.ResizedFrom != 0 && spec == prev.ResizedFrom && state.Replicas != spec && state.Phase == autoscale.PhaseExploring {
		// A resize decided and recorded earlier has not reached the spec
		// (the operator died, or the update conflicted): make it again.
		out.Scale = new(state.Replicas)
		out.RequeueWithin(time.Second)
		return
	}
	running, pending := scalablePods(c)
	obs := autoscale.Observation{Now: c.now.Time, SpecReplicas: spec, Running: running, Pending: pending}
	if sample != nil {
		obs.Sample = sample.Value
	}
	d := autoscale.Decide(AutoscaleConfig(c.job), state, obs)
	next := StatusOf(d.State)
	next.SampledAt = sampledAt(prev, sample)
	next.LastSample, next.LastSampleAt = lastSample(prev, sample)
	if d.Replicas != nil {
		next.ResizedFrom = spec
		out.Scale = d.Replicas
	}
	st.Autoscaler = next
	if d.Event != "" {
		out.event(false, musterv1.EventReasonAutoscaling, d.Event)
	}
	if d.State.Phase != autoscale.PhaseStopped {
		out.RequeueWithin(SampleInterval(c.job))
	}
}

// SampleInterval is how often the job's throughput is read.
func SampleInterval(job *musterv1.TrainingJob) time.Duration {
	return time.Duration(cmp.Or(job.Spec.Scaling.Autoscaling.IntervalSeconds, 10)) * time.Second
}

// SampleDue is whether the controller should read the job's throughput
// before planning, and since when.
func SampleDue(job *musterv1.TrainingJob, now time.Time) (since time.Time, due bool) {
	a := job.Status.Autoscaler
	if !topology.Autoscales(job) || (a != nil && a.Phase == string(autoscale.PhaseStopped)) || job.Status.Finished() {
		return time.Time{}, false
	}
	interval := SampleInterval(job)
	if a == nil || a.SampledAt == nil {
		return now.Add(-interval), true
	}
	return a.SampledAt.Time, !now.Before(a.SampledAt.Add(interval))
}

func sampledAt(prev *musterv1.AutoscalerStatus, sample *Throughput) *metav1.Time {
	if sample != nil {
		return new(metav1.NewTime(sample.At))
	}
	if prev != nil {
		return prev.SampledAt
	}
	return nil
}

// lastSample is the newest throughput a read found: this read's when it
// found a finite one, else the one status kept.
func lastSample(prev *musterv1.AutoscalerStatus, sample *Throughput) (string, *metav1.Time) {
	if sample != nil && sample.Value != nil && !math.IsNaN(*sample.Value) && !math.IsInf(*sample.Value, 0) {
		return strconv.FormatFloat(*sample.Value, 'g', 6, 64), new(metav1.NewTime(sample.At))
	}
	if prev != nil {
		return prev.LastSample, prev.LastSampleAt
	}
	return "", nil
}

// scalablePods counts the scalable roles' running pods, and their pods the
// scheduler found no place for: pods still starting are not pending to the
// autoscaler.
func scalablePods(c *planContext) (running, pending int32) {
	for _, pod := range c.pods.Current() {
		switch {
		case topology.ScalingOf(c.job, pod.Labels[musterv1.LabelRole]) == nil, pod.DeletionTimestamp != nil:
		case pod.Status.Phase == corev1.PodRunning:
			running++
		case observe.Unschedulable(pod):
			pending++
		}
	}
	return running, pending
}

// AutoscaleConfig is the autoscaler's configuration of a job: the scalable
// roles are sized together, so their bounds add up.
func AutoscaleConfig(job *musterv1.TrainingJob) autoscale.Config {
	a := job.Spec.Scaling.Autoscaling
	cfg := autoscale.Config{
		Step: cmp.Or(a.Step, 1), SamplesPerSize: cmp.Or(a.SamplesPerSize, 3),
		MinGain: float64(cmp.Or(a.MinGainPercent, 50)) / 100, SettleSeconds: new(ptr.Deref(a.SettleSeconds, autoscale.DefaultSettleSeconds)),
	}
	for _, r := range job.Spec.Scaling.Roles {
		cfg.MinReplicas += ptr.Deref(r.MinReplicas, 1)
		cfg.MaxReplicas += r.MaxReplicas
	}
	return cfg.Defaults()
}

// StateOf is the autoscaler's state as status keeps it.
func StateOf(s *musterv1.AutoscalerStatus) autoscale.State {
	if s == nil {
		return autoscale.State{}
	}
	st := autoscale.State{Phase: autoscale.Phase(s.Phase), Reason: autoscale.Reason(s.Reason), Message: s.Message,
		Replicas: s.Replicas, LastGood: s.LastGood}
	if s.ResizedAt != nil {
		st.ResizedAt = s.ResizedAt.Unix()
	}
	for _, z := range s.Sizes {
		size := autoscale.SizeStats{Replicas: z.Replicas}
		for _, v := range z.Samples {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				size.Samples = append(size.Samples, f)
			}
		}
		size.Throughput, _ = strconv.ParseFloat(z.Throughput, 64)
		st.Sizes = append(st.Sizes, size)
	}
	return st
}

// StatusOf is the autoscaler's state as status keeps it.
func StatusOf(st autoscale.State) *musterv1.AutoscalerStatus {
	s := &musterv1.AutoscalerStatus{Phase: string(st.Phase), Reason: string(st.Reason), Message: text.Head(st.Message, 1024),
		Replicas: st.Replicas, LastGood: st.LastGood}
	if st.ResizedAt != 0 {
		s.ResizedAt = new(metav1.Unix(st.ResizedAt, 0))
	}
	for _, z := range st.Sizes {
		size := musterv1.SizeThroughput{Replicas: z.Replicas, Throughput: strconv.FormatFloat(z.Throughput, 'g', 6, 64)}
		for _, v := range z.Samples {
			size.Samples = append(size.Samples, strconv.FormatFloat(v, 'g', 6, 64))
		}
		s.Sizes = append(s.Sizes, size)
	}
	return s
}
