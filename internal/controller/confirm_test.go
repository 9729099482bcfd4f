package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// behindCache is a pod cache that has yet to show some pods.
type behindCache struct {
	client.Client
	hidden map[string]bool
}

func (c behindCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok {
		pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return c.hidden[p.Name] })
	}
	return nil
}

// running is a harness whose job runs its two workers, planned by one
// operator process.
func running(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, twoWorkers(), interceptor.Funcs{}, Options{})
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	h.setPhase("j-worker-0", corev1.PodRunning)
	h.setPhase("j-worker-1", corev1.PodRunning)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("phase %s, want Running", job.Status.Phase)
	}
	return h
}

// An operator that has just started reads a status another process wrote,
// with a pod cache that has yet to show one of the running pods. Planned
// on that cache, the pod reads as vanished and a restart is counted that
// never happened; the operator lists the job's pods from the API server
// first, and waits for its cache.
func TestAStartedOperatorWaitsForAPodCacheBehindTheStatus(t *testing.T) {
	h := running(t)
	writes := h.statusWrites
	cache := behindCache{Client: h.c, hidden: map[string]bool{"j-worker-1": true}}
	h.r = NewReconciler(cache, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	job := h.job()
	if job.Status.Restarts.Total != 0 || h.statusWrites != writes || h.creates != 2 || res.RequeueAfter == 0 {
		t.Fatalf("a cache behind the status counted a restart: restarts %+v, %d status writes, %d creates, requeue %v",
			job.Status.Restarts, h.statusWrites-writes, h.creates, res.RequeueAfter)
	}
	// Still behind: the job waits for the pod the API server showed.
	if _, err := h.reconcile(); err != nil || h.statusWrites != writes {
		t.Fatalf("planned on a cache still behind: %v, %d status writes", err, h.statusWrites-writes)
	}
	// Caught up: nothing to do.
	cache.hidden = nil
	h.r.client = cache
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 0 || job.Status.Phase != musterv1.PhaseRunning || h.creates != 2 {
		t.Fatalf("after the cache caught up: restarts %+v, phase %s, %d creates", job.Status.Restarts, job.Status.Phase, h.creates)
	}
}

// The same cache, with the pod truly gone (its finalizer was taken off by
// hand and it was deleted): the list confirms it, and the restart counts.
func TestAVanishedPodConfirmedGoneIsCounted(t *testing.T) {
	h := running(t)
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.key.Namespace, Name: "j-worker-1"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Finalizers = nil
	if err := h.c.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 1 {
		t.Fatalf("a pod confirmed gone: restarts %+v, want one", job.Status.Restarts)
	}
}

// Someone removes the label Muster's cache finds a running pod by: the pod
// leaves the cache but is still the job's. It is not taken for vanished:
// it is found by its name, its labels are put back, and the job says so.
func TestAPodWhoseLabelsWereChangedIsFoundAndMended(t *testing.T) {
	h := running(t)
	ctx := context.Background()
	pod := &corev1.Pod{}
	key := types.NamespacedName{Namespace: h.key.Namespace, Name: "j-worker-1"}
	if err := h.c.Get(ctx, key, pod); err != nil {
		t.Fatal(err)
	}
	want := pod.Labels
	pod.Labels = map[string]string{"app": "mine"}
	if err := h.c.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 0 || h.creates != 2 {
		t.Fatalf("a relabelled pod taken for lost: restarts %+v, %d creates", job.Status.Restarts, h.creates)
	}
	if err := h.c.Get(ctx, key, pod); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q put back", k, pod.Labels[k], v)
		}
	}
	if pod.Labels["app"] != "mine" {
		t.Errorf("a label of the user's own was lost: %v", pod.Labels)
	}
	if !slices.ContainsFunc(h.events(), func(e string) bool { return strings.Contains(e, string(musterv1.EventReasonPodLabelsChanged)) }) {
		t.Errorf("no %s event", musterv1.EventReasonPodLabelsChanged)
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 0 || job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("after the labels were put back: restarts %+v, phase %s", job.Status.Restarts, job.Status.Phase)
	}
}
