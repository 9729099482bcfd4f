package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
)

// settle writes the plan's status, unless it differs from the job's only
// by progress that may wait for a later write (--status-batch, and a
// job's start with --status-batch-start; the plan's
// status then becomes before, the status as it was, and the job is
// requeued within the wait). The pods the plan already took for gone are
// released beside the write, not after it: a plan made after their release
// sees what this one saw (plan.Result.ReleaseAtOnce), and their
// replacements wait for the release to free their names. It says whether
// it wrote; releaseErr is the release's, err the write's.
func (r *Reconciler) settle(ctx context.Context, job *musterv1.TrainingJob, res *plan.Result, before *musterv1.TrainingJobStatus, now time.Time) (written bool, releaseErr, err error) {
	changed := !equality.Semantic.DeepEqual(job.Status, res.Status)
	if wait, ok := r.progress.hold(job, *res, changed, now); ok {
		// Nothing is acted on but what the plan keeps as it is
		// (plan.ProgressOnly), or a start none of whose status is
		// written yet (plan.StartOnly): its creates are checked against
		// the newest job instead (fresh).
		statusDeferred.Inc()
		res.Status = *before
		res.RequeueWithin(wait)
		changed = false
	}
	released := make(chan error, 1)
	if len(res.ReleaseAtOnce) > 0 {
		go func() { released <- r.releasePods(ctx, job.Namespace, res.ReleaseAtOnce) }()
	} else {
		released <- nil
	}
	if changed {
		written, err = r.writeStatus(ctx, job, res.Status)
	}
	return written, <-released, err
}

// writeStatus persists a status that differs from the job's, and says
// whether it wrote.
// The patch carries the job's resourceVersion, so a plan made from a stale
// view of the job fails with a conflict instead of overwriting newer
// decisions.
func (r *Reconciler) writeStatus(ctx context.Context, job *musterv1.TrainingJob, status musterv1.TrainingJobStatus) (bool, error) {
	updated := job.DeepCopy()
	updated.Status = status
	start := time.Now()
	err := r.opts.StatusClient.Status().Patch(ctx, updated,
		client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{}))
	statusWriteDurations.Observe(time.Since(start).Seconds())
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
// A status write checks that by itself; a plan that creates or deletes pods
// without one asks the API server. The job's cache and the pods' are two
// watches, and the job's can lag behind: the operator's own last status
// write not seen yet while the pods it then made already are. Such a plan
// would recreate the pods of a job that has finished or been suspended
// meanwhile, or take a task's new pod for the old instance a scale-down
// left deletion-pending in the status it cannot see past, and delete it.
func (r *Reconciler) fresh(ctx context.Context, job *musterv1.TrainingJob) (bool, error) {
	live := &musterv1.TrainingJob{}
	if err := r.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(job), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return live.ResourceVersion == job.ResourceVersion, nil
}
