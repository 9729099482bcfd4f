package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// podJobIndex indexes the cached pods by the job their label names. A
// reconcile reads its job's pods through it: a label selector alone makes
// the cache test every pod of the namespace, on every reconcile, which at
// 1,000 jobs of 10 pods in one namespace is 10,000 pods looked at to find
// 10.
const podJobIndex = "muster.dev/job-name"

// podJob is the index's key of a pod: the job its label names, if any.
func podJob(obj client.Object) []string {
	if name, ok := obj.GetLabels()[musterv1.LabelJobName]; ok {
		return []string{name}
	}
	return nil
}

// indexPods registers podJobIndex with the cache; it must run before the
// cache starts.
func indexPods(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Pod{}, podJobIndex, podJob)
}

// listJobPods lists the cached pods that carry the job's label, whoever
// controls them. They are the cache's own, not deep copies: a job of 5,000
// pods would otherwise copy them all on every reconcile. Nothing writes to
// them: planning takes them as values (the plan simulation checks that each
// plan leaves its pods as they were), and the executor writes only objects
// it builds.
func (r *Reconciler) listJobPods(ctx context.Context, job client.ObjectKey) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingFields{podJobIndex: job.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return list.Items, nil
}
