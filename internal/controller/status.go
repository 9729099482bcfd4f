package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// writeStatus persists a status that differs from the job's, and says
// whether it wrote.
// The patch carries the job's resourceVersion, so a plan made from a stale
// view of the job fails with a conflict instead of overwriting newer
// decisions.
func (r *Reconciler) writeStatus(ctx context.Context, job *musterv1.TrainingJob, status musterv1.TrainingJobStatus) (bool, error) {
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
	return err == nil, err
}

// fresh is whether the job the plan was made from is the newest there is.
// A status write checks that by itself; a plan that creates pods without
// one asks the API server, so that a job cache lagging behind the pod cache
// never recreates the pods of a job that has finished or been suspended
// meanwhile.
func (r *Reconciler) fresh(ctx context.Context, job *musterv1.TrainingJob) (bool, error) {
	if r.opts.APIReader == nil {
		return true, nil
	}
	live := &musterv1.TrainingJob{}
	if err := r.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(job), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return live.ResourceVersion == job.ResourceVersion, nil
}
