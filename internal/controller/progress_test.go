package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A starting job's progress waits up to the batch window for the next
// write; the job becoming Running is written at once, with it.
func TestProgressWaitsForTheBatch(t *testing.T) {
	h := newHarness(t, twoWorkers(), interceptor.Funcs{}, Options{StatusBatch: 5 * time.Second})
	clk := h.r.opts.Clock.(*clocktesting.FakePassiveClock)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 1 || h.creates != 2 {
		t.Fatalf("the first plan writes, then creates: %d writes, %d creates", h.statusWrites, h.creates)
	}

	// The pods are seen: their tasks go Pending, which can wait.
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 1 {
		t.Fatalf("progress alone was written at once: %d writes", h.statusWrites)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 5*time.Second {
		t.Fatalf("want a requeue within the window, got %v", res.RequeueAfter)
	}
	// Still within the window: still waiting.
	clk.SetTime(clk.Now().Add(3 * time.Second))
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 1 {
		t.Fatalf("written within the window: %d writes", h.statusWrites)
	}
	// The window has passed since the progress was first held: written.
	clk.SetTime(clk.Now().Add(2 * time.Second))
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 2 {
		t.Fatalf("progress held past the window: %d writes", h.statusWrites)
	}
	if got := h.job().Status.Roles[0].Pending; got != 2 {
		t.Fatalf("pending = %d, want 2", got)
	}

	// One pod runs: progress, held again. Both run: the job is Running,
	// written at once.
	h.setPhase("j-worker-0", corev1.PodRunning)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 2 {
		t.Fatalf("one pod running was written at once: %d writes", h.statusWrites)
	}
	h.setPhase("j-worker-1", corev1.PodRunning)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	job := h.job()
	if h.statusWrites != 3 || job.Status.Phase != musterv1.PhaseRunning || job.Status.Roles[0].Running != 2 {
		t.Fatalf("the job Running is written at once: %d writes, phase %s, running %d", h.statusWrites, job.Status.Phase, job.Status.Roles[0].Running)
	}
	if len(h.r.progress.since) != 0 {
		t.Fatalf("a written job still has held progress")
	}
}

// With StatusBatchStart a starting job's first status waits too: a job
// whose pods all run within the window is written once, Running; one whose
// pods take longer is written Pending when the window ends.
func TestAStartIsWrittenOnceItsPodsRun(t *testing.T) {
	h := newHarness(t, twoWorkers(), interceptor.Funcs{}, Options{StatusBatch: 5 * time.Second, StatusBatchStart: true})
	clk := h.r.opts.Clock.(*clocktesting.FakePassiveClock)
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 0 || h.creates != 2 {
		t.Fatalf("the first plan creates without a write: %d writes, %d creates", h.statusWrites, h.creates)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 5*time.Second {
		t.Fatalf("want a requeue within the window, got %v", res.RequeueAfter)
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	h.setPhase("j-worker-0", corev1.PodRunning)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 0 || h.creates != 2 {
		t.Fatalf("the pods seen and one running: %d writes, %d creates, want none and still 2", h.statusWrites, h.creates)
	}
	h.setPhase("j-worker-1", corev1.PodRunning)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	job := h.job()
	if h.statusWrites != 1 || job.Status.Phase != musterv1.PhaseRunning || !job.Status.IsTrue(musterv1.ConditionCreated) || job.Status.StartTime == nil {
		t.Fatalf("the job Running is its first write: %d writes, phase %s, conditions %v, start %v",
			h.statusWrites, job.Status.Phase, job.Status.Conditions, job.Status.StartTime)
	}

	// Pods that do not run within the window: the start is written when
	// it ends, and Running after.
	h = newHarness(t, twoWorkers(), interceptor.Funcs{}, Options{StatusBatch: 5 * time.Second, StatusBatchStart: true})
	clk = h.r.opts.Clock.(*clocktesting.FakePassiveClock)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(5 * time.Second))
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); h.statusWrites != 1 || job.Status.Phase != musterv1.PhasePending || h.creates != 2 {
		t.Fatalf("the window has passed: %d writes, phase %q, %d creates; want the start written, Pending", h.statusWrites, job.Status.Phase, h.creates)
	}
	if len(h.r.progress.since) != 0 {
		t.Fatalf("a written job still has a held status")
	}
}
