package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// The tier leans on the fake nodes leaving a pod deleted without grace to
// its finalizers, as a real node does: KWOK's own delete stage would strip
// the operator's tracking finalizer and delete by name. A pod deleted with
// grace is KWOK's, and shows that KWOK has acted by the time it is gone.
func TestFakeNodesLeaveGraceZeroDeletionsToFinalizers(t *testing.T) {
	ns := namespace(t, "chaos-fake")
	ctx := context.Background()
	pod := func(name string, grace int64) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: []string{musterv1.FinalizerTracking}},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: &grace,
				Containers:                    []corev1.Container{{Name: "c", Image: "busybox"}},
			},
		}
		tpl := corev1.PodTemplateSpec{Spec: p.Spec}
		onFakeNodes(&tpl)
		p.Spec = tpl.Spec
		p.Spec.TerminationGracePeriodSeconds = &grace
		return p
	}
	held, control := pod("held", 0), pod("control", 5)
	control.Finalizers = nil
	for _, p := range []*corev1.Pod{held, control} {
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"held", "control"} {
			var p corev1.Pod
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &p); err != nil || p.Status.Phase != corev1.PodRunning {
				return false, nil //nolint:nilerr // not yet
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the pods did not run on the fake nodes: %v", err)
	}
	if err := k8s.Delete(ctx, held, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, control); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "control"}, &corev1.Pod{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("KWOK did not complete the graceful deletion: %v", err)
	}
	var p corev1.Pod
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "held"}, &p); err != nil {
		t.Fatalf("the pod deleted without grace is gone despite its finalizer: %v", err)
	}
	if !slices.Contains(p.Finalizers, musterv1.FinalizerTracking) {
		t.Errorf("its finalizers were stripped: %v", p.Finalizers)
	}
	p.Finalizers = nil
	if err := k8s.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
}
