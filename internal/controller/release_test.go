package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// A pod someone deleted without grace, that only the tracking finalizer
// holds, is released beside the status write: even when the write
// conflicts and nothing else is done, the pod goes, and the next plan,
// which finds it gone, replaces it.
func TestPodGoneOnReleaseIsReleasedBesideTheStatusWrite(t *testing.T) {
	conflict := false
	h := newHarness(t, twoWorkers(), interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
		if conflict {
			return staleJob()
		}
		return nil
	}}, Options{})
	ctx := context.Background()
	for range 2 {
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	key := types.NamespacedName{Namespace: h.key.Namespace, Name: "j-worker-0"}
	pod := &corev1.Pod{}
	if err := h.c.Get(ctx, key, pod); err != nil {
		t.Fatal(err)
	}
	old := pod.UID
	if err := h.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Get(ctx, key, pod); err != nil {
		t.Fatal(err)
	}
	pod.DeletionGracePeriodSeconds = new(int64(0))
	if err := h.c.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Get(ctx, key, pod); err != nil || !observe.GoneOnRelease(pod) {
		t.Fatalf("want the pod deleted without grace and held by the finalizer only: %+v, %v", pod.ObjectMeta, err)
	}

	conflict = true
	creates := h.creates
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Get(ctx, key, pod); !apierrors.IsNotFound(err) {
		t.Fatalf("want the pod released (and so gone) despite the conflicting status write, got %+v, %v", pod.ObjectMeta, err)
	}
	if h.creates != creates {
		t.Fatalf("a plan whose status write conflicted created %d pods", h.creates-creates)
	}

	conflict = false
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Get(ctx, key, pod); err != nil || pod.UID == old {
		t.Fatalf("want j-worker-0 replaced, got %v (uid %s, old %s)", err, pod.UID, old)
	}
	job := h.job()
	if job.Status.Restarts.Total != 1 || job.Status.Restarts.Accountable != 0 {
		t.Fatalf("restarts = %+v, want the loss counted once, not charged", job.Status.Restarts)
	}
	if !observe.Tracked(pod) || pod.Labels[musterv1.LabelTaskAttempt] != "2" {
		t.Fatalf("the replacement: finalizers %v, labels %v", pod.Finalizers, pod.Labels)
	}
}
