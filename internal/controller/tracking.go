package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

// Every pod the operator creates carries the tracking finalizer
// (musterv1.FinalizerTracking) until the job's status accounts for its end,
// as the Kubernetes Job controller does with its own: a pod that fails and
// is deleted before the operator sees it stays, deleted but with its exit
// code, until a plan has read it. The finalizer goes after the status
// write, so a crash in between keeps the pod for the next plan; only a pod
// the plan took for gone already, which has nothing more to tell, goes
// beside the write (plan.Result.ReleaseAtOnce).

// +kubebuilder:rbac:groups="",resources=pods,verbs=patch

// releasePods removes the tracking finalizer from pods. The patch names
// the pod's UID, so it never touches a replacement that took the name; a
// pod already gone or replaced needs nothing.
func (r *Reconciler) releasePods(ctx context.Context, namespace string, refs []plan.PodRef) error {
	if len(refs) == 0 {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	var mu sync.Mutex
	var errs []error
	r.podWrites.each(ctx, len(refs), func(i int) {
		ref := refs[i]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ref.Name}}
		err := timed("release", func() error {
			return r.client.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, releasePatch(ref.UID)))
		})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			log.V(2).Info("Released pod", "pod", ref.Name, "uid", ref.UID)
			podActions.WithLabelValues("release", "ok").Inc()
		case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
			// Gone, or another instance holds the name now (its UID does
			// not match the patch's).
			log.V(2).Info("Pod not released", "pod", ref.Name, "uid", ref.UID, "reason", apierrors.ReasonForError(err), "error", err.Error())
			podActions.WithLabelValues("release", "gone").Inc()
		default:
			podActions.WithLabelValues("release", "error").Inc()
			errs = append(errs, fmt.Errorf("releasing pod %s: %w", ref.Name, err))
		}
	})
	return errors.Join(errs...)
}

// releasePatch removes the tracking finalizer from the pod with uid: a
// patch whose UID differs from the object's is refused.
func releasePatch(uid types.UID) []byte {
	return fmt.Appendf(nil, `{"metadata":{"uid":%q,"$deleteFromPrimitiveList/finalizers":[%q]}}`, uid, musterv1.FinalizerTracking)
}

// releaseOrphans lets the pods of a job that is gone, or being deleted,
// go: nothing will account for them any more, and the garbage collector
// deletes them. Only pods already being deleted are released, so that a
// new job of the same name, not yet in the cache, keeps its pods tracked.
func (r *Reconciler) releaseOrphans(ctx context.Context, job types.NamespacedName) error {
	items, err := r.listJobPods(ctx, job)
	if err != nil {
		return err
	}
	var refs []plan.PodRef
	for _, p := range items {
		if observe.Tracked(p) && p.DeletionTimestamp != nil {
			refs = append(refs, plan.PodRef{Name: p.Name, UID: p.UID})
		}
	}
	return r.releasePods(ctx, job.Namespace, refs)
}

// accessLost handles err, a request for job that failed. A Forbidden one
// means the operator has lost its rights in the job's namespace: in
// namespaced mode its Role there can go before the pods it holds, as when
// the namespace is deleted. No end can be recorded any more, so the job's
// pods being deleted are released (the release is granted cluster-wide),
// or the namespace's deletion would wait on them for ever. err is
// returned, so the job is retried with back-off while it lasts.
func (r *Reconciler) accessLost(ctx context.Context, job *musterv1.TrainingJob, err error) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	ctrl.LoggerFrom(ctx).Error(err, "The operator may not act in the job's namespace: releasing the job's pods being deleted, whose ends can no longer be recorded")
	return errors.Join(err, r.releaseOrphans(ctx, client.ObjectKeyFromObject(job)))
}
