package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
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

// jobPodLister reads the cached pods that carry a job's label, whoever
// controls them. They are the cache's own, neither deep copies nor copies
// of their structs: a job of 5,000 pods would otherwise copy them all on
// every reconcile. Nothing writes to them: planning takes them as values
// (the plan simulation checks that each plan leaves its pods as they
// were), and the executor writes only objects it builds.
type jobPodLister func(ctx context.Context, job client.ObjectKey) ([]*corev1.Pod, error)

// indexPods adds podJobIndex to the manager's pod informer, before the
// cache starts, and returns the lister that reads through it. It reads the
// informer's indexer itself: a List through the cache, even without deep
// copies, copies every pod's struct into the list it returns (about 5 MB
// at 5,000 pods, on each reconcile of the job).
func indexPods(ctx context.Context, mgr ctrl.Manager) (jobPodLister, error) {
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	withIndexer, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		// A cache of several namespaces (--namespaces) has an informer per
		// namespace behind one without an indexer of its own: read
		// through a field index and the client, copying the structs.
		if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podJobIndex, podJob); err != nil {
			return nil, err
		}
		return listThrough(mgr.GetClient()), nil
	}
	if err := inf.AddIndexers(toolscache.Indexers{podJobIndex: podJobKeys}); err != nil {
		return nil, err
	}
	return listIndexed(withIndexer.GetIndexer()), nil
}

// podJobKeys are the keys of podJobIndex in an informer's indexer: the
// job's namespace and name, as the pod's namespace holds it.
func podJobKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, job := range podJob(pod) {
		keys = append(keys, pod.Namespace+"/"+job)
	}
	return keys, nil
}

// listIndexed is the lister of an informer's indexer that has podJobIndex
// (podJobKeys).
func listIndexed(indexer toolscache.Indexer) jobPodLister {
	return func(_ context.Context, job client.ObjectKey) ([]*corev1.Pod, error) {
		objs, err := indexer.ByIndex(podJobIndex, job.Namespace+"/"+job.Name)
		if err != nil {
			return nil, err
		}
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, obj := range objs {
			if pod, ok := obj.(*corev1.Pod); ok {
				pods = append(pods, pod)
			}
		}
		return pods, nil
	}
}

// listThrough is the lister of a client that reads from a cache with
// podJobIndex as a field index, as the unit tests' fake client does.
func listThrough(c client.Reader) jobPodLister {
	return func(ctx context.Context, job client.ObjectKey) ([]*corev1.Pod, error) {
		var list corev1.PodList
		if err := c.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingFields{podJobIndex: job.Name},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		pods := make([]*corev1.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = &list.Items[i]
		}
		return pods, nil
	}
}
