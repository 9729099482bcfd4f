// Package controller reconciles TrainingJobs: it observes a job's pods and
// Service, asks package plan what to do, writes the status once, and then
// carries out the plan's actions.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/leader"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Options tune the reconciler.
type Options struct {
	// MaxConcurrentReconciles is how many jobs are reconciled at once.
	MaxConcurrentReconciles int
	// CreateWorkers is how many pod creates, deletes and finalizer
	// releases the operator has in flight at once, over all its jobs.
	CreateWorkers int
	// ExpectationTimeout is how long a job waits for the cache to show the
	// operator's own pod writes before it plans anyway. The pod events meet
	// the expectations as they come, so it only runs out when the cache is
	// that far behind, or its watch missed a pod's whole life; five
	// minutes, as Kubernetes' Job controller.
	ExpectationTimeout time.Duration
	// StatusClient writes job status. Give it its own rate limiter so status
	// never queues behind a burst of pod creates.
	StatusClient client.Client
	// PodEventBatch is how long after a pod changes its job is reconciled,
	// so that many pods' changes make one reconcile and one status write.
	PodEventBatch time.Duration
	// StatusBatch is how long a status that only shows progress (tasks
	// starting, counts; plan.ProgressOnly) may wait for the next write,
	// so that a starting job's pods make one write, not one per batch of
	// pod events. Zero writes every change at once.
	StatusBatch time.Duration
	// StatusBatchStart lets a starting job's first status (Pending, its
	// pods on their way; plan.StartOnly) wait within StatusBatch too, so
	// that a job whose pods run within it is written once, not twice.
	StatusBatchStart bool
	// Clock is the time source; tests pass a fake one.
	Clock clock.PassiveClock
	// APIReader reads from the API server, not the cache: the check that a
	// plan which creates or deletes pods without writing status was made
	// from the newest job, and the owners of objects a create collided
	// with. Nil reads through the client.
	APIReader client.Reader
	// Throughput reads a job's training throughput for the autoscaler;
	// nil reads none.
	Throughput ThroughputReader
	// Progress reads a job's training progress (spec.progress); nil reads
	// none.
	Progress ProgressReader
	// Gang are the gang backends this operator drives.
	Gang GangOptions
	// Kueue puts jobs with the kueue.x-k8s.io/queue-name label behind
	// Kueue's quotas (its CRDs must be installed).
	Kueue bool
	// Fence, if set, is asked before every write and event: an error
	// refuses it, and a write allowed must be done within the time it
	// gives (internal/leader: a leader that woke from a pause past its
	// lease must not act).
	Fence leader.Fence
	// InPlace is what the operator offers for restarting pods in place.
	// Its Default may be RestartModeAuto, which the reconciler works out
	// for each job from its pods and the nodes; Setup makes it Recreate
	// when the operator may not follow the nodes.
	InPlace plan.InPlaceSupport
}

func (o *Options) defaults(c client.Client) {
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 50
	}
	if o.CreateWorkers <= 0 {
		o.CreateWorkers = 32
	}
	if o.ExpectationTimeout <= 0 {
		o.ExpectationTimeout = 5 * time.Minute
	}
	if o.StatusClient == nil {
		o.StatusClient = c
	}
	if o.APIReader == nil {
		o.APIReader = c
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Reconciler reconciles TrainingJobs.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	opts     Options
	expect   *expectations
	// failures are creates the API server refused, kept for the job's next
	// plan: nothing in the cluster records them.
	failuresMu sync.Mutex
	failures   map[types.NamespacedName]refusals
	// progress is when each job's plans first left progress unwritten.
	progress *pendingProgress
	// progressReads reads each job's training progress outside Reconcile.
	progressReads *progressReads
	// wake brings a job back to Reconcile from outside the watches.
	wake chan event.GenericEvent
	// podWrites caps the pod writes in flight.
	podWrites *podWrites
	// confirmed are the jobs whose pods this process has listed from the
	// API server since it started (confirm.go).
	confirmed *confirmedJobs
	// sshSecrets are the MPI SSH Secrets made whose names no status read
	// holds yet (sshsecret.go).
	sshSecrets *sshSecrets
	// nodes follows what the nodes support for the restart mode Auto;
	// nil when the default is another (restartmode.go).
	nodes *nodeSupport
	// listJobPods reads a job's pods from the cache (podindex.go).
	listJobPods jobPodLister
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// NewReconciler makes a Reconciler. c must read from the operator's cache.
func NewReconciler(c client.Client, recorder events.EventRecorder, opts Options) *Reconciler {
	opts.defaults(c)
	r := &Reconciler{client: c, recorder: recorder, opts: opts, expect: newExpectations(opts.ExpectationTimeout),
		failures: map[types.NamespacedName]refusals{}, progress: newPendingProgress(opts.StatusBatch, opts.StatusBatchStart),
		podWrites: newPodWrites(opts.CreateWorkers), confirmed: &confirmedJobs{jobs: map[types.NamespacedName]bool{}},
		sshSecrets: newSSHSecrets(), listJobPods: listThrough(c)}
	r.wake = make(chan event.GenericEvent, wakeBuffer)
	r.progressReads = newProgressReads(opts.Progress, r.wake)
	if opts.InPlace.Default == RestartModeAuto {
		r.nodes = newNodeSupport(ctrl.Log.WithName("restarts"))
	}
	return r
}

// wakeBuffer is how many wakes wait for the controller at most; past it a
// wake is dropped, and its job waits for its next requeue.
const wakeBuffer = 1024

// +kubebuilder:rbac:groups=muster.dev,resources=trainingjobs,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=muster.dev,resources=trainingjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups=muster.dev,resources=trainingjobs/scale,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile observes a job, plans, writes status once, then acts.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &musterv1.TrainingJob{}
	if err := r.client.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.takeFailures(req.NamespacedName, nil)
			r.progress.forget(req.NamespacedName)
			r.progressReads.forget(req.NamespacedName)
			r.confirmed.forget(req.NamespacedName)
			r.sshSecrets.forget(req.NamespacedName)
			r.expect.pruneExpired(r.opts.Clock.Now())
			return ctrl.Result{}, r.releaseOrphans(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("trainingJob", klog.KObj(job))
	ctx = ctrl.LoggerInto(ctx, log)
	if job.DeletionTimestamp != nil {
		// The garbage collector removes the children through their owner
		// references.
		r.expect.forget(job.UID)
		r.takeFailures(req.NamespacedName, nil)
		r.progress.forget(req.NamespacedName)
		r.progressReads.forget(req.NamespacedName)
		r.sshSecrets.forget(req.NamespacedName)
		return ctrl.Result{}, r.releaseOrphans(ctx, req.NamespacedName)
	}

	pods, hasService, err := r.observe(ctx, job)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("observing children: %w", err)
	}
	now := r.opts.Clock.Now()
	hasService = r.expect.serviceExists(job.UID, hasService, now)
	if ok, wait := r.expect.satisfied(job.UID, pods, now); !ok {
		expectationWaits.Inc()
		log.V(4).Info("Waiting for the cache to show our own pod writes")
		return ctrl.Result{RequeueAfter: wait}, nil
	}

	gangIn, groups, err := r.observeGang(ctx, job)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("observing the gang: %w", err)
	}
	admission, queue, err := r.observeQueue(ctx, job)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("observing the job's Kueue Workload: %w", err)
	}
	tensorBoard, tensorBoardOwn, err := r.observeTensorBoard(ctx, job)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("observing the TensorBoard: %w", err)
	}
	progressRead, nextRead := r.readProgress(ctx, job, pods, now)
	res := plan.Plan(plan.Input{Job: job, Pods: pods, HasService: hasService, Now: now, Throughput: r.sample(ctx, job, pods, now),
		Progress:       progressRead,
		CreateFailures: r.takeFailures(req.NamespacedName, job), Gang: gangIn, Admission: admission, TensorBoard: tensorBoard,
		SSHSecret: r.sshSecrets.unrecorded(job), InPlace: r.inPlaceSupport(job, pods)})
	if behind, err := r.cacheBehind(ctx, job, pods, &res, now); err != nil || behind {
		// The pod events the cache takes in bring the job back; the
		// requeue is for a cache that shows nothing new.
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	before := job.Status.DeepCopy()
	written, releaseErr, err := r.settle(ctx, job, &res, before, now)
	if err != nil {
		if apierrors.IsConflict(err) {
			// Our view of the job is stale: plan again from a fresh one,
			// without acting on this plan.
			log.V(4).Info("Status write conflicted, replanning")
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return ctrl.Result{}, r.accessLost(ctx, job, fmt.Errorf("writing status: %w", err))
	}
	if !written && needsFreshJob(res) {
		if ok, err := r.fresh(ctx, job); err != nil || !ok {
			log.V(4).Info("The job changed since the cache saw it, replanning")
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, err
		}
	}
	if log := log.V(3); log.Enabled() {
		log.Info("Planned", "attempt", res.Status.Attempt, "pods", podStates(pods), "create", len(res.CreatePods),
			"delete", len(res.DeletePods), "release", len(res.ReleasePods)+len(res.ReleaseAtOnce), "statusWritten", written)
	}
	r.record(job, before, res)
	if err := errors.Join(releaseErr, r.execute(ctx, job, observed{groups: groups, queue: queue, pods: pods, tensorBoard: tensorBoardOwn}, res)); err != nil {
		return ctrl.Result{}, err
	}
	requeueFor(&res, nextRead, queue)
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// requeueFor looks at the job again when nothing else would bring it
// back in time: its next progress read, the end of its Workload slice's
// handover.
func requeueFor(res *plan.Result, nextRead time.Duration, q *queued) {
	if nextRead > 0 {
		res.RequeueWithin(nextRead)
	}
	if q != nil && q.recheck > 0 {
		res.RequeueWithin(q.recheck)
	}
}

// needsFreshJob is whether a plan's actions must not be taken from a job
// older than the newest (see fresh): it creates, deletes or restarts pods
// in place, or makes an MPI job's SSH Secret, which, planned from a job
// the cache shows from before the write that named its Secret, would be a
// second. A restart in place planned from a job a write behind would move
// pods back to the attempt before, and restart them once more, uncounted.
func needsFreshJob(res plan.Result) bool {
	return len(res.CreatePods) > 0 || len(res.DeletePods) > 0 || len(res.RestartPods) > 0 || res.CreateSSHSecret != nil
}

// observe lists the job's pods and looks up its Service, from the cache.
// Only objects the job controls count: a same-named object someone else made
// is never adopted or deleted.
func (r *Reconciler) observe(ctx context.Context, job *musterv1.TrainingJob) ([]*corev1.Pod, bool, error) {
	items, err := r.listJobPods(ctx, client.ObjectKeyFromObject(job))
	if err != nil {
		return nil, false, err
	}
	pods := make([]*corev1.Pod, 0, len(items))
	var orphans []plan.PodRef
	for _, p := range items {
		switch {
		case metav1.IsControlledBy(p, job):
			pods = append(pods, p)
		case observe.Tracked(p) && p.DeletionTimestamp != nil:
			// A pod of an earlier job of this name, orphaned when it was
			// deleted (--cascade=orphan): nothing accounts for it.
			orphans = append(orphans, plan.PodRef{Name: p.Name, UID: p.UID})
		}
	}
	if err := r.releasePods(ctx, job.Namespace, orphans); err != nil {
		return nil, false, err
	}
	var svc corev1.Service
	err = r.client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: objects.ServiceName(job)}, &svc)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, false, err
	}
	// A Service of that name that is not ours still blocks creating one; the
	// create fails and says so in an event.
	return pods, err == nil, nil
}

// ThroughputReader reads a job's throughput from its running pods: the
// newest sample they reported since since, or nil.
type ThroughputReader interface {
	Read(ctx context.Context, m musterv1.ThroughputMetric, pods []*corev1.Pod, since time.Time) (*float64, error)
}

// sample reads the job's throughput when the autoscaler is due for one. A
// read that fails is logged and planned as no sample: the autoscaler waits
// for the next.
func (r *Reconciler) sample(ctx context.Context, job *musterv1.TrainingJob, pods []*corev1.Pod, now time.Time) *plan.Throughput {
	since, due := plan.SampleDue(job, now)
	if !due || r.opts.Throughput == nil {
		return nil
	}
	var running []*corev1.Pod
	for _, pod := range pods {
		if topology.ScalingOf(job, pod.Labels[musterv1.LabelRole]) != nil && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			running = append(running, pod)
		}
	}
	v, err := r.opts.Throughput.Read(ctx, job.Spec.Scaling.Autoscaling.Metric, running, since)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading throughput")
	}
	return &plan.Throughput{Value: v, At: now}
}

// SetupWithManager registers the reconciler and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	owned := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &musterv1.TrainingJob{}, handler.OnlyControllerOwner())
	b := ctrl.NewControllerManagedBy(mgr).
		For(&musterv1.TrainingJob{}).
		Watches(&corev1.Pod{}, batchedOwnerEvents(r.opts.PodEventBatch, r.opts.Clock, r.expect)).
		Watches(&corev1.Service{}, owned).
		Watches(&appsv1.Deployment{}, owned)
	// Only the enabled backends' kinds are watched: a cluster without
	// Volcano has no Volcano PodGroups to watch.
	for _, kind := range gangKinds(r.opts.Gang) {
		b = b.Watches(kind, owned)
	}
	if r.opts.Kueue {
		b = b.Watches(workloadObject(), owned)
	}
	// A progress read that finished brings its job back.
	b = b.WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{}))
	if r.nodes != nil {
		// No job is planned before this watch has handed r.nodes the
		// initial list of nodes: a controller's workers start once all its
		// watches have synced.
		b = b.Watches(&corev1.Node{}, r.nodes)
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles}).
		Named("trainingjob").
		Complete(r)
}

// podStates says, for the log, what a plan saw of each pod.
func podStates(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		s := fmt.Sprintf("%s/%s/%s", p.Name, p.UID[:min(8, len(p.UID))], p.Status.Phase)
		if p.DeletionTimestamp != nil {
			s += "/deleting"
		}
		if observe.Tracked(p) {
			s += "/tracked"
		}
		out = append(out, s)
	}
	return out
}
