package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// writeStatus persists status if it changed. The patch carries the job's
// resourceVersion, so a plan made from a stale view of the job fails with a
// conflict instead of overwriting newer decisions.
func (r *Reconciler) writeStatus(ctx context.Context, job *musterv1.TrainingJob, status musterv1.TrainingJobStatus) error {
	if equality.Semantic.DeepEqual(job.Status, status) {
		return nil
	}
	updated := job.DeepCopy()
	updated.Status = status
	err := r.opts.StatusClient.Status().Patch(ctx, updated,
		client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		statusWrites.WithLabelValues("ok").Inc()
		job.Status = status
		job.ResourceVersion = updated.ResourceVersion
	case apierrors.IsConflict(err):
		statusWrites.WithLabelValues("conflict").Inc()
	default:
		statusWrites.WithLabelValues("error").Inc()
	}
	return err
}
