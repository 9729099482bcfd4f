package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestProgressOnly(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 3).
		RestartPolicy(musterv1.RestartPolicyOnFailure).Scalable(1, 5).WithDefaults().Obj())
	progress := func(what string, want bool) {
		t.Helper()
		res := w.plan()
		if got := ProgressOnly(w.job, res); got != want {
			t.Fatalf("%s: ProgressOnly = %v, want %v (status %+v)", what, got, want, res.Status)
		}
		w.job.Status = res.Status
	}

	progress("the first plan creates the pods", false)
	w.step()
	progress("the pods are seen, their tasks Pending", true)
	w.setPhase("j-w-0", corev1.PodRunning)
	progress("one of three Running", true)
	progress("nothing new", true)
	w.setPhase("j-w-1", corev1.PodRunning)
	w.setPhase("j-w-2", corev1.PodRunning)
	progress("all Running: the job is Running", false)

	w.job.Spec.Scaling.Replicas = new(int32(5))
	w.job.Generation++
	progress("a scale-up creates pods", false)
	w.step()
	progress("the new pods Pending", true)
	w.setPhase("j-w-3", corev1.PodRunning)
	progress("one new pod Running", true)
	w.setPhase("j-w-4", corev1.PodRunning)
	progress("both Running: the scale-up is done", false)

	w.exit("j-w-1", 1)
	progress("a pod failed: a restart", false)
}

func TestStartOnly(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 3).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	created := w.now
	startOnly := func(what string, want bool) Result {
		t.Helper()
		res := w.plan()
		if got := StartOnly(w.job, res); got != want {
			t.Fatalf("%s: StartOnly = %v, want %v (status %+v)", what, got, want, res.Status)
		}
		return res
	}
	// The status is never written while the plans start the job only: the
	// pods are made, and seen, with the job's status still empty.
	act := func() {
		status := w.job.Status
		w.step()
		w.job.Status = status
	}

	startOnly("the first plan creates the Service and the pods", true)
	act()
	w.now = w.now.Add(4 * time.Second)
	startOnly("the pods are seen, their tasks Pending", true)
	w.setPhase("j-w-0", corev1.PodRunning)
	startOnly("one of three Running", true)
	w.setPhase("j-w-1", corev1.PodRunning)
	w.setPhase("j-w-2", corev1.PodRunning)
	res := startOnly("all Running: the job is Running, which is written", false)
	if got := res.Status.StartTime; got == nil || !got.Time.Equal(created) {
		t.Fatalf("start time %v, want the first pod's creation %v, not the plan's %v", got, created, w.now)
	}

	w.job.Status = res.Status
	w.setPhase("j-w-0", corev1.PodPending)
	startOnly("a written job is never started again", false)

	w = newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	startOnly("the first plan", true)
	act()
	w.exit("j-w-1", 1)
	startOnly("a pod failed before the first write: its restart is written", false)

	w = newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
		Execution(musterv1.ExecutionCreate).WithDefaults().Obj())
	startOnly("a job held by spec.run.execution is not started", false)
}
