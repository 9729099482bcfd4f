package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil/kubelet"
)

// TestOperatorKilledDuringAnInPlaceRestart stops an operator between
// writing a gang's in-place restart and carrying it out (its pod patches
// fail), then kills the next one again and again while the gang restarts
// (the fake nodes restart a pod's containers as kubelet 1.36 does when its
// in-place restart count goes up): exactly one restart is charged, every
// pod ends on the new attempt, none is re-created, and the job runs again.
func TestOperatorKilledDuringAnInPlaceRestart(t *testing.T) {
	ns := namespace(t, "chaos-inplace")
	m := startMonitor(t, ns)
	var failPatches atomic.Bool
	kubeconfig, stats := faultProxy(t, faults{failPodPatches: &failPatches})
	inPlace := []string{"--restart-watcher-image=muster-operator:chaos", "--default-restart-mode=InPlace"}
	first := startOperator(t, kubeconfig, inPlace...)
	d := &driver{ctx: context.Background(), ns: ns}
	const name, n = "inplace", 4
	if err := d.create(d.job(name).Role("w", n).RestartPolicy(musterv1.RestartPolicyOnFailure).
		RestartScope(musterv1.RestartScopeJob).BackoffLimit(5)); err != nil {
		t.Fatal(err)
	}
	pods, err := d.waitRunning(name, n, func(p corev1.Pod) bool { return len(p.Status.InitContainerStatuses) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]types.UID{}
	for _, p := range pods {
		if p.Spec.InitContainers[0].Name != objects.RestartWatcherName {
			t.Fatalf("pod %s was not made to restart in place", p.Name)
		}
		before[p.Name] = p.UID
	}

	// The first operator decides and writes the restart, and cannot patch
	// a pod: it dies with the restart written and not carried out.
	failPatches.Store(true)
	if err := d.failInPlace(pods[1], 3); err != nil {
		t.Fatal(err)
	}
	if _, err := d.waitJob(name, "attempt 1 written", func(j *musterv1.TrainingJob) bool { return j.Status.Attempt == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(d.ctx, 50*time.Millisecond, stepTimeout, true, func(context.Context) (bool, error) {
		return stats.failedPodPatches.Load() >= n, nil
	}); err != nil {
		t.Fatalf("the first operator did not try to patch the pods: %v", err)
	}
	first.kill()
	live, err := d.livePods(d.ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range live {
		if p.Labels[musterv1.LabelJobAttempt] != "0" {
			t.Fatalf("pod %s moved on though no patch landed: the test did not stop the restart half way", p.Name)
		}
	}

	next := startOperator(t, "", inPlace...)
	stopKilling := next.killEvery(t, rand.New(rand.NewPCG(seed, 5)), 300*time.Millisecond, 1500*time.Millisecond)
	onNewAttempt := func(ctx context.Context) (bool, error) {
		live, err := d.livePods(ctx, name)
		if err != nil || len(live) != n {
			return false, nil //nolint:nilerr // the API server may be restarting: keep waiting
		}
		for _, p := range live {
			if p.Labels[musterv1.LabelJobAttempt] != "1" || len(p.Status.InitContainerStatuses) == 0 ||
				p.Status.InitContainerStatuses[0].RestartCount < 1 {
				return false, nil
			}
		}
		return true, nil
	}
	err = wait.PollUntilContextTimeout(d.ctx, 200*time.Millisecond, stepTimeout, true, onNewAttempt)
	stopKilling()
	if err != nil {
		t.Fatalf("the pods did not all restart into attempt 1: %v", err)
	}
	t.Logf("%d pod patches failed; the next operator killed %d times (seed %d)", stats.failedPodPatches.Load(), next.killCount(), seed)
	job, err := d.waitJob(name, "running attempt 1", func(j *musterv1.TrainingJob) bool {
		return j.Status.Attempt == 1 && j.Status.Phase == musterv1.PhaseRunning
	})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status.Restarts.Total != 1 {
		t.Errorf("restarts = %+v, want exactly one charged", job.Status.Restarts)
	}
	if live, err = d.livePods(d.ctx, name); err != nil {
		t.Fatal(err)
	}
	for _, p := range live {
		if before[p.Name] != p.UID {
			t.Errorf("pod %s was re-created", p.Name)
		}
	}
	m.check(t)
}

// failInPlace makes a training container of a pod that restarts in place
// fail with code and be restarted alone, as its restart rule has the node
// do: its last end holds the exit, and the pod runs on.
func (d *driver) failInPlace(pod corev1.Pod, code int32) error {
	return d.retry(func(ctx context.Context) error {
		var fresh corev1.Pod
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, &fresh); err != nil {
			return err
		}
		if fresh.UID != pod.UID {
			return fmt.Errorf("pod %s was replaced", pod.Name)
		}
		// An end in the second its run began is taken for the run
		// before's (observe.InPlaceFailure): fail in a later second, as a
		// real run does.
		if w := fresh.Status.InitContainerStatuses; len(w) > 0 && w[0].State.Running != nil &&
			!time.Now().Truncate(time.Second).After(w[0].State.Running.StartedAt.Time) {
			return fmt.Errorf("pod %s started its run this second", pod.Name)
		}
		kubelet.RestartedAlone(&fresh, code, time.Now())
		return k8s.Status().Update(ctx, &fresh)
	})
}

// TestInPlaceFailuresWhileTheOperatorIsDown kills the operator and keeps
// it down while a training container of a pod that restarts in place
// fails again and again, each failure restarted alone by its node, which
// keeps only the last exit. The operator that comes back charges every
// one, exactly: three failures are three restarts and the task restarts;
// three more with backoffLimit 5 end the job at exactly 5 restarts.
func TestInPlaceFailuresWhileTheOperatorIsDown(t *testing.T) {
	ns := namespace(t, "chaos-inplace-down")
	m := startMonitor(t, ns)
	inPlace := []string{"--restart-watcher-image=muster-operator:chaos", "--default-restart-mode=InPlace"}
	d := &driver{ctx: context.Background(), ns: ns}
	const name, n = "inplace-down", 2
	if err := d.create(d.job(name).Role("w", n).RestartPolicy(musterv1.RestartPolicyOnFailure).
		RestartScope(musterv1.RestartScopeTask).BackoffLimit(5)); err != nil {
		t.Fatal(err)
	}
	op := startOperator(t, "", inPlace...)
	pods, err := d.waitRunning(name, n, func(p corev1.Pod) bool { return len(p.Status.InitContainerStatuses) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	failing := pods[0]
	uid := failing.UID

	failWhileDown := func(op *operator) {
		t.Helper()
		op.kill()
		for range 3 {
			if err := d.failInPlace(failing, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	failWhileDown(op)
	op = startOperator(t, "", inPlace...)
	job, err := d.waitJob(name, "three restarts charged and the task running again", func(j *musterv1.TrainingJob) bool {
		return j.Status.Restarts.Total >= 3 && j.Status.Phase == musterv1.PhaseRunning && tasksRunning(j) == n
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Status.Restarts; got != (musterv1.RestartCounts{Total: 3, Accountable: 3}) {
		t.Errorf("after three failures unseen: restarts %+v, want exactly 3", got)
	}

	failWhileDown(op)
	startOperator(t, "", inPlace...)
	job, err = d.waitJob(name, "failed past its budget", func(j *musterv1.TrainingJob) bool { return j.Status.Phase == musterv1.PhaseFailed })
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Status.Restarts; got != (musterv1.RestartCounts{Total: 5, Accountable: 5}) {
		t.Errorf("after three more: restarts %+v, want exactly the budget, 5", got)
	}
	if c := job.Status.Completion; c == nil || c.Reason != musterv1.ReasonBackoffLimitExceeded {
		t.Errorf("completion %+v, want %s", c, musterv1.ReasonBackoffLimitExceeded)
	}
	var fresh corev1.Pod
	if err := k8s.Get(d.ctx, types.NamespacedName{Namespace: ns, Name: failing.Name}, &fresh); err == nil && fresh.UID != uid {
		t.Errorf("pod %s was re-created: it restarts in place", failing.Name)
	}
	m.check(t)
}

// tasksRunning is how many of job's tasks are Running.
func tasksRunning(j *musterv1.TrainingJob) int32 {
	var n int32
	for _, rs := range j.Status.Roles {
		n += rs.Running
	}
	return n
}
