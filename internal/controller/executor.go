package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// observed is what a reconcile saw beside the job, for the actions.
type observed struct {
	groups []client.Object
	queue  *queued
	pods   []*corev1.Pod
	// tensorBoard are the job's own TensorBoard objects.
	tensorBoard tensorBoardObjects
}

// execute carries out a plan whose status is already written. Every action
// is idempotent: creating a pod that exists or deleting one that is gone is
// not an error, so replaying a plan after a crash is safe. The one create
// that is not, an MPI job's SSH Secret, which the API server names, leaves
// at worst an unused Secret the job owns (createSSHSecret).
func (r *Reconciler) execute(ctx context.Context, job *musterv1.TrainingJob, seen observed, res plan.Result) error {
	log := ctrl.LoggerFrom(ctx)
	var errs []error
	// The Service is made beside the pods, not before them: a pod names
	// its Service (its subdomain), but only its peers' lookups need the
	// Service, and they come once the pods run.
	svcErr := make(chan error, 1)
	if svc := res.CreateService; svc != nil {
		go func() { svcErr <- r.createService(ctx, job, svc) }()
	} else {
		svcErr <- nil
	}
	// The plan that asks for an MPI job's SSH Secret creates no pod: the
	// next records the Secret's name, and the pods mount it.
	if s := res.CreateSSHSecret; s != nil {
		errs = append(errs, r.createSSHSecret(ctx, job, s))
	}
	// Released first: a finished pod deleted next is then gone at once.
	errs = append(errs, r.releasePods(ctx, job.Namespace, res.ReleasePods))
	errs = append(errs, r.deletePods(ctx, job, res.DeletePods))
	errs = append(errs, r.restartPods(ctx, job, res.RestartPods))
	// The gang object exists before any of its pods.
	g, err := r.syncGang(ctx, job, seen.groups, res)
	if err != nil {
		errs = append(errs, err)
	} else {
		_, backend := r.gangOf(job)
		decorate(backend, g, res.CreatePods)
		if seen.queue != nil {
			place(seen.queue.placements, res.CreatePods)
		}
		// The runtime's objects exist before any pod that mounts or runs
		// under them: a pod whose ServiceAccount is missing is refused. A
		// scale-down changes them too: the hosts files lose the removed
		// tasks.
		if len(res.CreatePods) > 0 || scalesDown(res) {
			if err := r.ensureRuntimeObjects(ctx, job); err != nil {
				errs = append(errs, err)
				res.CreatePods = nil
			}
		}
		errs = append(errs, r.createPods(ctx, job, res.CreatePods))
	}
	errs = append(errs, r.syncQueue(ctx, job, seen.queue, seen.pods, res))
	errs = append(errs, r.syncTensorBoard(ctx, job, seen.tensorBoard, res.TensorBoard))
	if n := res.Scale; n != nil {
		errs = append(errs, r.scale(ctx, job, *n))
	}
	if res.DeleteJob {
		log.V(2).Info("Deleting job after its TTL", "reason", musterv1.ReasonTTLExpired)
		r.recorder.Eventf(job, nil, corev1.EventTypeNormal, string(musterv1.EventReasonTTLExpired), "Delete",
			"deleting the job: spec.run.ttlSecondsAfterFinished has passed")
		err := r.client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground),
			client.Preconditions{UID: &job.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting job: %w", err))
		}
	}
	errs = append(errs, <-svcErr)
	return errors.Join(errs...)
}

// createService makes the job's Service, and says why in a condition and
// an event when it cannot.
func (r *Reconciler) createService(ctx context.Context, job *musterv1.TrainingJob, svc *corev1.Service) error {
	ctrl.LoggerFrom(ctx).V(2).Info("Creating service", "service", svc.Name)
	err := r.client.Create(ctx, svc)
	switch {
	case err == nil:
		r.expect.expectService(job.UID, r.opts.Clock.Now())
	case apierrors.IsAlreadyExists(err) && !r.foreignObject(ctx, job, svc):
		// The job's own, made by an earlier reconcile whose create the
		// cache has yet to show (an expectation that timed out).
		r.expect.expectService(job.UID, r.opts.Clock.Now())
	case apierrors.IsAlreadyExists(err):
		// The cache holds only Services that carry the job's label:
		// this one is someone else's.
		r.refused(job, plan.CreateFailure{Object: "Service " + svc.Name, NameTaken: true, Err: err})
	default:
		r.refused(job, plan.CreateFailure{Object: "Service " + svc.Name, Err: err})
		return fmt.Errorf("creating service: %w", err)
	}
	return nil
}

func (r *Reconciler) createPods(ctx context.Context, job *musterv1.TrainingJob, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Creating pods", "count", len(pods))
	now := r.opts.Clock.Now()
	var mu sync.Mutex
	var errs, held []error
	// A pod that replaces an earlier instance of its task was announced by
	// the plan's own event (TaskRestarting, JobRestarting, ...): only first
	// instances are counted in PodsCreated, so a replacement costs no
	// second event.
	created := 0
	r.podWrites.each(ctx, len(pods), func(i int) {
		pod := pods[i]
		// Let each pod go once made, so that a big job's creates hold the
		// pods in flight, not every one (with the API server's answer
		// decoded into it) until the last is made.
		defer func() { pods[i] = nil }()
		r.expect.expectCreate(job.UID, pod.Name, now)
		err := timed("create", func() error { return r.client.Create(ctx, pod) })
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			r.expect.created(job.UID, pod.Name, pod.UID)
			if observe.TaskAttempt(pod) <= 1 {
				created++
			}
			podActions.WithLabelValues("create", "ok").Inc()
		case apierrors.IsAlreadyExists(err):
			r.expect.createFailed(job.UID, pod.Name)
			switch r.nameHolder(ctx, job, pod) {
			case heldByOther:
				r.refused(job, plan.CreateFailure{Object: "pod " + pod.Name, NameTaken: true, Err: err})
			case heldByEarlier:
				// An earlier instance the cache no longer shows (or not
				// yet as deleting) still holds the name: nothing was made,
				// so the job comes back once it is gone.
				held = append(held, fmt.Errorf("pod %s: an earlier instance still holds the name", pod.Name))
			}
			// heldAsWanted: our cache lagged, the pod is there as wanted.
		default:
			r.expect.createFailed(job.UID, pod.Name)
			podActions.WithLabelValues("create", "error").Inc()
			r.refused(job, plan.CreateFailure{Object: "pod " + pod.Name, Err: err})
			errs = append(errs, fmt.Errorf("creating pod %s: %w", pod.Name, err))
		}
	})
	if created > 0 {
		r.recorder.Eventf(job, nil, corev1.EventTypeNormal, string(musterv1.EventReasonPodsCreated), "Create", "created %d pods", created)
	}
	if len(errs) > 0 {
		r.warn(job, musterv1.EventReasonPodCreateFailed, "%d pod creates failed, first: %v", len(errs), errs[0])
	}
	// A name still held is not a failure to warn of, but the reconcile is
	// not done: it is retried, with back-off, until the name is free.
	return errors.Join(append(errs, held...)...)
}

func (r *Reconciler) deletePods(ctx context.Context, job *musterv1.TrainingJob, dels []plan.PodDeletion) error {
	if len(dels) == 0 {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	now := r.opts.Clock.Now()
	return r.writePods(ctx, "delete", len(dels), func(i int) error {
		d := dels[i]
		log.V(2).Info("Deleting pod", "pod", d.Name, "reason", d.Reason)
		r.expect.expectDelete(job.UID, d.UID, now)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: d.Name}}
		// The UID precondition makes sure we delete the instance we decided
		// about, never a replacement that took its name.
		opts := []client.DeleteOption{client.Preconditions{UID: &d.UID}}
		if d.Force {
			opts = append(opts, client.GracePeriodSeconds(0))
		}
		if err := timed("delete", func() error { return r.client.Delete(ctx, pod, opts...) }); err != nil {
			r.expect.deleteFailed(job.UID, d.UID)
			return fmt.Errorf("deleting pod %s: %w", d.Name, err)
		}
		return nil
	}, func(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsConflict(err) })
}

// restartPods asks pods to restart in place: one patch each moves its
// attempt labels and raises the restart count its watcher follows
// (internal/restartwatch). The UID in the patch makes sure it is the
// instance the plan decided about: the API server refuses a change of
// UID, so a replacement that took the name is left alone. A pod that is
// gone or replaced needs nothing: the next plan sees to its task.
func (r *Reconciler) restartPods(ctx context.Context, job *musterv1.TrainingJob, restarts []plan.PodRestart) error {
	if len(restarts) == 0 {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	now := r.opts.Clock.Now()
	for _, p := range restarts {
		r.expect.expectRestart(job.UID, p.UID, int(p.Restarts), now)
	}
	return r.writePods(ctx, "restart", len(restarts), func(i int) error {
		p := restarts[i]
		log.V(2).Info("Restarting pod in place", "pod", p.Name, "attempt", p.Attempt, "taskAttempt", p.TaskAttempt, "reason", p.Reason)
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": p.UID,
			"labels": map[string]string{
				musterv1.LabelJobAttempt:  strconv.Itoa(int(p.Attempt)),
				musterv1.LabelTaskAttempt: strconv.Itoa(int(p.TaskAttempt)),
			},
			"annotations": map[string]string{musterv1.AnnotationInPlaceRestarts: strconv.Itoa(int(p.Restarts))},
		}})
		if err == nil {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: p.Name}}
			err = timed("restart", func() error { return r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)) })
		}
		if err != nil {
			r.expect.restartFailed(job.UID, p.UID)
			return fmt.Errorf("restarting pod %s in place: %w", p.Name, err)
		}
		return nil
	}, func(err error) bool {
		return apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err)
	})
}

// writePods makes write(i) for each of n pods, as many at once as
// podWrites allows, and counts each in podActions under action: ok, or
// error unless needsNothing says the pod is gone or replaced, which the
// next plan sees to. It returns the errors counted.
func (r *Reconciler) writePods(ctx context.Context, action string, n int, write func(i int) error, needsNothing func(error) bool) error {
	var mu sync.Mutex
	var errs []error
	r.podWrites.each(ctx, n, func(i int) {
		err := write(i)
		switch {
		case err == nil:
			podActions.WithLabelValues(action, "ok").Inc()
		case needsNothing(err):
		default:
			podActions.WithLabelValues(action, "error").Inc()
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// record emits the plan's events and counts its decisions in metrics, once
// the status that holds them is written.
func (r *Reconciler) record(job *musterv1.TrainingJob, before *musterv1.TrainingJobStatus, res plan.Result) {
	for _, e := range res.Events {
		kind := corev1.EventTypeNormal
		if e.Warning {
			kind = corev1.EventTypeWarning
		}
		r.recorder.Eventf(job, nil, kind, string(e.Reason), "Reconcile", "%s", e.Message)
	}
	after := res.Status
	if n := after.Restarts.Accountable - before.Restarts.Accountable; n > 0 {
		taskRestarts.WithLabelValues("true").Add(float64(n))
	}
	if n := (after.Restarts.Total - after.Restarts.Accountable) - (before.Restarts.Total - before.Restarts.Accountable); n > 0 {
		taskRestarts.WithLabelValues("false").Add(float64(n))
	}
	if before.CompletionTime == nil && after.CompletionTime != nil && after.Completion != nil {
		jobsFinished.WithLabelValues(string(after.Phase), string(after.Completion.Reason)).Inc()
	}
}

func (r *Reconciler) warn(job *musterv1.TrainingJob, reason musterv1.EventReason, format string, args ...any) {
	r.recorder.Eventf(job, nil, corev1.EventTypeWarning, string(reason), "Reconcile", format, args...)
}

// scale resizes the job's scalable roles as the autoscaler decided, through
// the /scale subresource like any other scaler, and only if the job is
// still the one the decision was made on: a conflict means someone else
// changed it, which the next plan sees.
func (r *Reconciler) scale(ctx context.Context, job *musterv1.TrainingJob, replicas int32) error {
	ctrl.LoggerFrom(ctx).V(2).Info("Resizing the scalable roles", "replicas", replicas)
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name, ResourceVersion: job.ResourceVersion},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}
	err := r.client.SubResource("scale").Update(ctx, job.DeepCopy(), client.WithSubResourceBody(scale))
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("resizing to %d: %w", replicas, err)
	}
	return nil
}

// holder is who holds the name of a pod a create found taken.
type holder int

const (
	// heldAsWanted: the pod the create asked for, made by an earlier
	// reconcile whose create the cache has yet to show.
	heldAsWanted holder = iota
	// heldByEarlier: an earlier instance of the job's (another attempt, or
	// being deleted), which the plan took for gone.
	heldByEarlier
	// heldByOther: a pod the job does not control.
	heldByOther
)

// nameHolder says who holds the name of want, whose create found it
// taken. Asked of the API server: the cache holds only the job's own pods,
// and not yet, or no longer, the one that holds the name. A pod gone by
// the time it is read was an earlier instance: it is made again next time.
func (r *Reconciler) nameHolder(ctx context.Context, job *musterv1.TrainingJob, want *corev1.Pod) holder {
	pod := &corev1.Pod{}
	if err := r.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(want), pod); err != nil {
		return heldByEarlier
	}
	switch {
	case !metav1.IsControlledBy(pod, job):
		return heldByOther
	case pod.DeletionTimestamp != nil,
		pod.Labels[musterv1.LabelJobAttempt] != want.Labels[musterv1.LabelJobAttempt],
		pod.Labels[musterv1.LabelTaskAttempt] != want.Labels[musterv1.LabelTaskAttempt]:
		return heldByEarlier
	}
	return heldAsWanted
}

// refused keeps a refused create for the job's next plan.
func (r *Reconciler) refused(job *musterv1.TrainingJob, f plan.CreateFailure) {
	r.failuresMu.Lock()
	defer r.failuresMu.Unlock()
	key := client.ObjectKeyFromObject(job)
	kept := r.failures[key]
	if kept.uid != job.UID {
		kept = refusals{uid: job.UID}
	}
	if len(kept.failures) < maxFailuresKept {
		kept.failures = append(kept.failures, f)
	}
	r.failures[key] = kept
}

// refusals are one job's refused creates, by the job's UID: a job deleted
// and made again under the same name does not inherit them.
type refusals struct {
	uid      types.UID
	failures []plan.CreateFailure
}

// maxFailuresKept bounds what one job's refused creates hold in memory:
// the first few say what is wrong.
const maxFailuresKept = 8

// takeFailures hands the job's refused creates to its next plan, and
// forgets them; job nil forgets those of a job that is gone.
func (r *Reconciler) takeFailures(key types.NamespacedName, job *musterv1.TrainingJob) []plan.CreateFailure {
	r.failuresMu.Lock()
	defer r.failuresMu.Unlock()
	kept := r.failures[key]
	delete(r.failures, key)
	if job == nil || kept.uid != job.UID {
		return nil
	}
	return kept.failures
}

// scalesDown is whether the plan removes tasks for a scale-down.
func scalesDown(res plan.Result) bool {
	for _, d := range res.DeletePods {
		if d.Reason == plan.DeleteReasonScaleDown {
			return true
		}
	}
	return false
}
