package cmdutil

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// WatchJob calls seen with the job as it is now and then with every change,
// until seen returns true, the job is deleted (seen gets nil) or ctx ends.
// It reads the job afresh whenever the watch ends (the API server closes
// watches after a while), so no change is missed.
func WatchJob(ctx context.Context, c client.WithWatch, namespace, name string, seen func(*musterv1.TrainingJob) bool) error {
	for ctx.Err() == nil {
		job := &musterv1.TrainingJob{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
			if apierrors.IsNotFound(err) {
				seen(nil)
				return nil
			}
			return ignoreCanceled(ctx, err)
		}
		if seen(job) {
			return nil
		}
		w, err := c.Watch(ctx, &musterv1.TrainingJobList{}, client.InNamespace(namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: job.ResourceVersion, AllowWatchBookmarks: true}})
		if err != nil {
			return ignoreCanceled(ctx, err)
		}
		if stop := drainJob(ctx, w, name, seen); stop {
			return nil
		}
	}
	return nil
}

func drainJob(ctx context.Context, w watch.Interface, name string, seen func(*musterv1.TrainingJob) bool) bool {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			j, isJob := ev.Object.(*musterv1.TrainingJob)
			switch {
			case !isJob || j.Name != name:
			case ev.Type == watch.Deleted:
				seen(nil)
				return true
			case seen(j):
				return true
			}
		}
	}
}

func ignoreCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
