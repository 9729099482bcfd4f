package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=delete

// tensorBoardObjects are the job's own TensorBoard objects that exist;
// nil interfaces when absent, never typed nil pointers.
type tensorBoardObjects struct {
	deployment client.Object
	service    client.Object
}

// observeTensorBoard reads the job's TensorBoard Deployment and Service
// from the cache. A job that never had one costs two cache lookups.
func (r *Reconciler) observeTensorBoard(ctx context.Context, job *musterv1.TrainingJob) (plan.TensorBoard, tensorBoardObjects, error) {
	key := client.ObjectKey{Namespace: job.Namespace, Name: objects.TensorBoardName(job)}
	var seen plan.TensorBoard
	var own tensorBoardObjects
	dep := &appsv1.Deployment{}
	switch err := r.client.Get(ctx, key, dep); {
	case err == nil && metav1.IsControlledBy(dep, job):
		own.deployment = dep
		seen.Deployment = true
		seen.Ready = dep.Status.ReadyReplicas > 0
		if want, _, ok := objects.DesiredTensorBoard(job); ok {
			seen.Current = dep.Annotations[objects.AnnotationTensorBoardHash] == want.Annotations[objects.AnnotationTensorBoardHash]
		}
	case err != nil && !apierrors.IsNotFound(err):
		return seen, own, err
	}
	svc := &corev1.Service{}
	switch err := r.client.Get(ctx, key, svc); {
	case err == nil && metav1.IsControlledBy(svc, job):
		own.service = svc
		seen.Service = true
	case err != nil && !apierrors.IsNotFound(err):
		return seen, own, err
	}
	return seen, own, nil
}

// syncTensorBoard carries out the plan's TensorBoard action.
func (r *Reconciler) syncTensorBoard(ctx context.Context, job *musterv1.TrainingJob, own tensorBoardObjects, action plan.TensorBoardAction) error {
	switch action {
	case plan.TensorBoardEnsure:
		dep, svc, ok := objects.DesiredTensorBoard(job)
		if !ok {
			return nil
		}
		return errors.Join(r.ensureTensorBoardObject(ctx, job, dep, own.deployment),
			r.ensureTensorBoardObject(ctx, job, svc, own.service))
	case plan.TensorBoardRemove:
		ctrl.LoggerFrom(ctx).V(2).Info("Removing the TensorBoard")
		var errs []error
		for _, obj := range []client.Object{own.deployment, own.service} {
			if obj == nil || obj.GetDeletionTimestamp() != nil {
				continue
			}
			uid := obj.GetUID()
			err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("deleting %s: %w", kindName(obj), err))
			}
		}
		return errors.Join(errs...)
	}
	return nil
}

// ensureTensorBoardObject creates want, or, for a Deployment of the job's
// built from an older spec, replaces its spec. A refused create is kept for
// the next plan, which blocks the TensorBoard, not the job.
func (r *Reconciler) ensureTensorBoardObject(ctx context.Context, job *musterv1.TrainingJob, want, have client.Object) error {
	if have == nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Creating TensorBoard object", "object", kindName(want))
		err := r.client.Create(ctx, want)
		switch {
		case err == nil:
			return nil
		case apierrors.IsAlreadyExists(err):
			if r.foreignObject(ctx, job, want) {
				r.refused(job, plan.CreateFailure{Object: kindName(want), NameTaken: true, Err: err, TensorBoard: true})
			}
			// Otherwise our cache lagged: it is there, as wanted.
			return nil
		default:
			r.refused(job, plan.CreateFailure{Object: kindName(want), Err: err, TensorBoard: true})
			return nil
		}
	}
	wantDep, ok := want.(*appsv1.Deployment)
	haveDep, isDep := have.(*appsv1.Deployment)
	if !ok || !isDep || haveDep.Annotations[objects.AnnotationTensorBoardHash] == wantDep.Annotations[objects.AnnotationTensorBoardHash] {
		return nil
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Updating the TensorBoard Deployment to the new spec.tensorboard")
	updated := haveDep.DeepCopy()
	updated.Spec = wantDep.Spec
	updated.Annotations = wantDep.Annotations
	err := r.client.Update(ctx, updated)
	switch {
	case err == nil, apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// A conflict or a deletion is seen by the next plan.
		return nil
	default:
		r.refused(job, plan.CreateFailure{Object: kindName(want), Err: err, TensorBoard: true})
		return nil
	}
}
