package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// TestWhatHappensWhileTheOperatorIsDown stops the operator, and meanwhile
// a job's pod fails and is deleted, and another job is deleted with its
// pods. When the operator starts again, the failed pod is counted (the
// tracking finalizer kept it until the operator read it) and replaced,
// and the deleted job's pods, orphans now, are released and go.
func TestWhatHappensWhileTheOperatorIsDown(t *testing.T) {
	ns := namespace(t, "chaos-down")
	m := startMonitor(t, ns)
	op := startOperator(t, "")
	d := &driver{ctx: context.Background(), ns: ns}

	const failing, deleted = "down-fail", "down-deleted"
	for _, name := range []string{failing, deleted} {
		if err := d.create(d.job(name).Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(5)); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := d.waitRunning(failing, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	orphans, err := d.waitRunning(deleted, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	op.kill()

	failed := pods[0]
	if err := d.exit(failed, 1); err != nil {
		t.Fatal(err)
	}
	var ended time.Time
	if err := d.podUntil(failed, "failed", func(p *corev1.Pod) bool {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Terminated != nil {
				ended = c.State.Terminated.FinishedAt.Time
			}
		}
		return p.Status.Phase == corev1.PodFailed && !ended.IsZero()
	}); err != nil {
		t.Fatal(err)
	}
	// Times have a resolution of a second, and an end in the second of the
	// deletion counts as caused by it (never charged): the deletion comes
	// in a later second, so the end is the pod's own.
	if err := wait.PollUntilContextTimeout(d.ctx, 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return time.Now().Truncate(time.Second).After(ended), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.retry(func(ctx context.Context) error { return client.IgnoreNotFound(k8s.Delete(ctx, failed.DeepCopy())) }); err != nil {
		t.Fatal(err)
	}
	var job musterv1.TrainingJob
	if err := d.retry(func(ctx context.Context) error {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: deleted}, &job); err != nil {
			return err
		}
		return k8s.Delete(ctx, &job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	}); err != nil {
		t.Fatal(err)
	}
	// The garbage collector deletes the orphans; the finalizer holds them.
	for _, p := range append(orphans, failed) {
		if err := d.podUntil(p, "deleting and held", func(p *corev1.Pod) bool {
			return p.DeletionTimestamp != nil && len(p.Finalizers) > 0
		}); err != nil {
			t.Fatal(err)
		}
	}

	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.waitRunning(failing, 2, func(p corev1.Pod) bool { return p.UID != failed.UID }); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(orphans, failed) {
		if err := d.podUntil(p, "gone", nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.finishAll(failing, 2, musterv1.PhaseSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(got); o.Restarts != 1 || o.TaskRestarts != 1 || o.AccountableRestarts != 1 {
		t.Errorf("want the failed pod counted once; got %+v", o)
	}
	m.check(t)
	for _, c := range op.crashed() {
		t.Error("operator crashed:", c)
	}
}

// podUntil waits until the pod (this instance of it, by UID) passes
// check; a nil check waits until it is gone.
func (d *driver) podUntil(pod corev1.Pod, what string, check func(*corev1.Pod) bool) error {
	err := wait.PollUntilContextTimeout(d.ctx, 200*time.Millisecond, stepTimeout, true, func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		err := k8s.Get(ctx, client.ObjectKeyFromObject(&pod), &p)
		gone := client.IgnoreNotFound(err) == nil && (err != nil || p.UID != pod.UID)
		switch {
		case check == nil:
			return gone, nil
		case gone:
			return false, fmt.Errorf("pod %s is gone", pod.Name)
		case err != nil:
			return false, nil //nolint:nilerr // the API server may be restarting: keep waiting
		}
		return check(&p), nil
	})
	if err != nil {
		return fmt.Errorf("pod %s: waiting until %s: %w", pod.Name, what, err)
	}
	return nil
}
