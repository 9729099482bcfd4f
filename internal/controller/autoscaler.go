package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/autoscale"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Autoscaler resizes the elastic role of jobs that ask for it by measured
// throughput. Every interval it reads a sample, asks autoscale.Decide, and
// resizes through spec.replicas (as the /scale subresource would) before it
// records its state in status.autoscaler. Anyone else resizing the role
// stops it: it never fights a user or an HPA.
type Autoscaler struct {
	client   client.Client
	reader   *throughputReader
	recorder events.EventRecorder
	clock    clock.PassiveClock
	mu       sync.Mutex
	lastRead map[types.UID]time.Time
	// last is the state this operator last wrote for each job. The cache
	// may show a resize before the status written after it; planning on
	// that stale status would look like someone else had resized the job.
	last map[types.UID]autoscale.State
}

// NewAutoscaler makes an Autoscaler. c reads from the operator's cache; cs
// reads pod logs.
func NewAutoscaler(c client.Client, cs kubernetes.Interface, recorder events.EventRecorder) *Autoscaler {
	return &Autoscaler{
		client: c, recorder: recorder, clock: clock.RealClock{}, lastRead: map[types.UID]time.Time{},
		last:   map[types.UID]autoscale.State{},
		reader: &throughputReader{cs: cs, http: newMetricsClient()},
	}
}

// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups=muster.dev,resources=trainingjobs/scale,verbs=get;update;patch

// Reconcile runs one tick of a job's autoscaler.
func (a *Autoscaler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &musterv1.TrainingJob{}
	if err := a.client.Get(ctx, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !active(job) {
		return ctrl.Result{}, nil
	}
	p := job.Spec.Scaling.Autoscaling
	log := ctrl.LoggerFrom(ctx).WithValues("trainingJob", klog.KObj(job))
	interval := time.Duration(cmp.Or(p.IntervalSeconds, 10)) * time.Second
	state := a.stateFor(job)
	if state.Phase != autoscale.PhaseStopped {
		obs, err := a.observe(ctx, job)
		if err != nil {
			return ctrl.Result{}, err
		}
		d := autoscale.Decide(configOf(job), state, obs)
		if d.Replicas != nil {
			log.V(2).Info("Resizing the elastic role", "replicas", *d.Replicas, "reason", d.State.Reason)
			scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name},
				Spec: autoscalingv1.ScaleSpec{Replicas: *d.Replicas}}
			if err := a.client.SubResource("scale").Update(ctx, job.DeepCopy(), client.WithSubResourceBody(scale)); err != nil {
				return ctrl.Result{}, fmt.Errorf("resizing: %w", err)
			}
		}
		// The decision is made and acted on: from now on it is the state,
		// whether or not the status write below goes through at once.
		a.mu.Lock()
		a.last[job.UID] = d.State
		a.mu.Unlock()
		if d.Event != "" {
			a.recorder.Eventf(job, nil, corev1.EventTypeNormal, musterv1.ReasonAutoscaling, "Autoscale", "%s", d.Event)
		}
		state = d.State
	}
	if err := a.writeStatus(ctx, job, statusOf(state)); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	if state.Phase == autoscale.PhaseStopped {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}

// stateFor is the job's autoscaler state: what this operator last wrote,
// else what status says (after a restart of the operator).
func (a *Autoscaler) stateFor(job *musterv1.TrainingJob) autoscale.State {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.last[job.UID]; ok {
		return st
	}
	return stateOf(job.Status.Autoscaler)
}

// active is whether a job is running and not held.
func active(job *musterv1.TrainingJob) bool {
	return job.DeletionTimestamp == nil && !ptr.Deref(job.Spec.Run.Suspend, false) &&
		!job.Status.Finished() && topology.Autoscales(job)
}

// observe counts the elastic role's pods and reads a new sample.
func (a *Autoscaler) observe(ctx context.Context, job *musterv1.TrainingJob) (autoscale.Observation, error) {
	now := a.clock.Now()
	obs := autoscale.Observation{Now: now, SpecReplicas: ptr.Deref(job.Spec.Scaling.Replicas, 0)}
	var list corev1.PodList
	if err := a.client.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingLabels{
		musterv1.LabelJobName: job.Name,
	}); err != nil {
		return obs, err
	}
	scalable := topology.ScalableRoles(job)
	var running []*corev1.Pod
	for i := range list.Items {
		pod := &list.Items[i]
		switch {
		case !slices.Contains(scalable, pod.Labels[musterv1.LabelRole]):
		case pod.DeletionTimestamp != nil:
		case pod.Status.Phase == corev1.PodRunning:
			running = append(running, pod)
		// Pods still starting are not pending for the autoscaler: only pods
		// the scheduler found no place for are.
		case plan.Unschedulable(pod):
			obs.Pending++
		}
	}
	obs.Running = int32(len(running))
	a.mu.Lock()
	since, ok := a.lastRead[job.UID]
	a.lastRead[job.UID] = now
	a.mu.Unlock()
	if !ok {
		since = now.Add(-time.Duration(cmp.Or(job.Spec.Scaling.Autoscaling.IntervalSeconds, 10)) * time.Second)
	}
	sample, err := a.reader.read(ctx, job.Spec.Scaling.Autoscaling.Metric, running, since)
	obs.Sample = sample
	return obs, err
}

func (a *Autoscaler) writeStatus(ctx context.Context, job *musterv1.TrainingJob, st *musterv1.AutoscalerStatus) error {
	if equality.Semantic.DeepEqual(job.Status.Autoscaler, st) {
		return nil
	}
	updated := job.DeepCopy()
	updated.Status.Autoscaler = st
	return a.client.Status().Patch(ctx, updated, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{}))
}

// SetupWithManager runs the autoscaler for jobs that set spec.autoscaling.
func (a *Autoscaler) SetupWithManager(mgr ctrl.Manager) error {
	wants := predicate.NewPredicateFuncs(func(o client.Object) bool {
		job, ok := o.(*musterv1.TrainingJob)
		return ok && topology.Autoscales(job)
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&musterv1.TrainingJob{}, builder.WithPredicates(wants, predicate.GenerationChangedPredicate{})).
		Named("trainingjob-autoscaler").
		Complete(a)
}

func configOf(job *musterv1.TrainingJob) autoscale.Config {
	p := job.Spec.Scaling.Autoscaling
	cfg := autoscale.Config{
		Step: cmp.Or(p.Step, 1), SamplesPerSize: cmp.Or(p.SamplesPerSize, 3),
		MinGain: float64(cmp.Or(p.MinGainPercent, 50)) / 100, SettleSeconds: ptr.Deref(p.SettleSeconds, 30),
	}
	// The scalable roles are sized together: their bounds add up.
	for _, r := range job.Spec.Scaling.Roles {
		cfg.MinReplicas += ptr.Deref(r.MinReplicas, 1)
		cfg.MaxReplicas += r.MaxReplicas
	}
	return cfg.Defaults()
}

func stateOf(s *musterv1.AutoscalerStatus) autoscale.State {
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

func statusOf(st autoscale.State) *musterv1.AutoscalerStatus {
	s := &musterv1.AutoscalerStatus{Phase: string(st.Phase), Reason: string(st.Reason), Message: st.Message,
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
