package plan

import (
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// A changed spec.run.restartRequest starts a new attempt of a running job:
// every pod goes, the restart is counted but never charged, and the
// request is recorded so that it acts once.
func TestRestartRequestStartsANewAttempt(t *testing.T) {
	// No restart left in the budget: a requested restart needs none.
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).BackoffLimit(0).WithDefaults().Obj())
	w.runAll()
	w.job.Spec.Run.RestartRequest = "2026-11-24T02:00:00Z"

	res := w.plan()
	if res.Status.Attempt != 1 || res.Status.Restarts != (musterv1.RestartCounts{Total: 1}) {
		t.Fatalf("attempt %d restarts %+v, want attempt 1 and one restart not charged", res.Status.Attempt, res.Status.Restarts)
	}
	if len(res.DeletePods) != 2 || len(res.CreatePods) != 0 {
		t.Fatalf("want both pods deleted and none created yet: %d deletes, %d creates", len(res.DeletePods), len(res.CreatePods))
	}
	if res.Status.RestartRequest != w.job.Spec.Run.RestartRequest {
		t.Errorf("status.restartRequest = %q", res.Status.RestartRequest)
	}
	if a := res.Status.Attempts; len(a) != 1 || a[0].Completion.Reason != musterv1.ReasonJobRestarting ||
		a[0].Completion.Message != "restart requested (spec.run.restartRequest 2026-11-24T02:00:00Z)" {
		t.Errorf("attempts %+v", a)
	}

	// Replanned from the written status (the operator died before acting,
	// or acted): the request is not taken twice.
	w.job.Status = res.Status
	if again := w.plan(); again.Status.Attempt != 1 || again.Status.Restarts.Total != 1 {
		t.Fatalf("replay: attempt %d restarts %+v", again.Status.Attempt, again.Status.Restarts)
	}
	for range 4 {
		w.step()
	}
	w.runAll()
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning || w.pods["j-w-0"].Labels[musterv1.LabelJobAttempt] != "1" {
		t.Fatalf("phase %s, pod labels %v", w.job.Status.Phase, w.pods["j-w-0"].Labels)
	}
}

// A request the job was created with, or one made while it is suspended
// or finished, is recorded and starts nothing.
func TestRestartRequestOutsideARunIsOnlyRecorded(t *testing.T) {
	created := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).WithDefaults().Obj()
	created.Spec.Run.RestartRequest = "at-create"
	res := newWorld(t, created).plan()
	if res.Status.Attempt != 0 || res.Status.RestartRequest != "at-create" || len(res.CreatePods) != 1 {
		t.Fatalf("created with a request: attempt %d, recorded %q, %d creates", res.Status.Attempt, res.Status.RestartRequest, len(res.CreatePods))
	}

	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 1).WithDefaults().Obj())
	w.runAll()
	w.job.Spec.Run.Execution = musterv1.ExecutionSuspend
	w.step()
	w.job.Spec.Run.RestartRequest = "while-suspended"
	res = w.plan()
	if res.Status.Attempt != 0 || res.Status.Restarts.Total != 0 || res.Status.RestartRequest != "while-suspended" {
		t.Fatalf("suspended: attempt %d restarts %+v recorded %q", res.Status.Attempt, res.Status.Restarts, res.Status.RestartRequest)
	}

	w = newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 1).WithDefaults().Obj())
	w.runAll()
	w.exit("j-w-0", 0)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseSucceeded {
		t.Fatalf("phase %s", w.job.Status.Phase)
	}
	w.job.Spec.Run.RestartRequest = "after-the-end"
	res = w.plan()
	if res.Status.Phase != musterv1.PhaseSucceeded || res.Status.Attempt != 0 || len(res.CreatePods) != 0 || res.Status.RestartRequest != "after-the-end" {
		t.Fatalf("finished: phase %s attempt %d creates %d recorded %q", res.Status.Phase, res.Status.Attempt, len(res.CreatePods), res.Status.RestartRequest)
	}
}
