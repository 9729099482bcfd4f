package plan

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/testutil"
)

func released(res Result, name string) bool {
	for _, r := range slices.Concat(res.ReleasePods, res.ReleaseAtOnce) {
		if r.Name == name {
			return true
		}
	}
	return false
}

// A pod that failed and was deleted (by the pod garbage collector, a user)
// before the operator saw it is held by the tracking finalizer: the plan
// reads its exit code, charges the restart, and only then lets it go.
func TestFailedPodDeletedUnseenIsCharged(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	w.runAll()
	for _, p := range w.pods {
		if !observe.Tracked(p) {
			t.Fatalf("pod %s was created without the tracking finalizer", p.Name)
		}
	}
	w.exit("j-w-1", 3)
	w.now = w.now.Add(time.Minute)
	p := w.pods["j-w-1"]
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.NewTime(w.now)), new(int64(0))

	res := w.step()
	if got := res.Status.Restarts; got != (musterv1.RestartCounts{Total: 1, Accountable: 1}) {
		t.Fatalf("restarts = %+v, want the failure charged", got)
	}
	if exit := w.task("w", 1).LastExit; exit == nil || exit.Code != 3 {
		t.Fatalf("last exit = %+v, want code 3", exit)
	}
	if !released(res, "j-w-1") || released(res, "j-w-0") {
		t.Fatalf("want only j-w-1 released, got %+v", res.ReleasePods)
	}
	if len(res.CreatePods) != 0 {
		t.Fatal("a replacement was made while the ended pod holds the name")
	}
	// Released, it goes; the replacement follows, and nothing is charged
	// twice.
	delete(w.pods, "j-w-1")
	res = w.step()
	if len(res.CreatePods) != 1 || res.CreatePods[0].Name != "j-w-1" {
		t.Fatalf("want the replacement of j-w-1, got %d creates", len(res.CreatePods))
	}
	if got := res.Status.Restarts; got != (musterv1.RestartCounts{Total: 1, Accountable: 1}) {
		t.Fatalf("restarts = %+v after the replacement", got)
	}
}

// A running pod someone deletes was ended by the deletion, not by its
// program: it is released at once and its loss is not charged.
func TestRunningPodDeletedIsReleasedAndNotCharged(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	w.runAll()
	p := w.pods["j-w-0"]
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.NewTime(w.now.Add(30*time.Second))), new(int64(30))
	res := w.step()
	if !released(res, "j-w-0") || res.Status.Restarts.Total != 0 {
		t.Fatalf("want j-w-0 released and nothing counted yet, got %+v, restarts %+v", res.ReleasePods, res.Status.Restarts)
	}
	// The kubelet stops it (exit 143, after the deletion was asked) and
	// it goes.
	p.Status = testutil.ExitedStatus(143, "Error", w.now.Add(time.Second))
	p.Status.Phase = corev1.PodFailed
	res = w.step()
	if res.Status.Restarts.Accountable != 0 {
		t.Fatalf("a deleted pod's end was charged: %+v", res.Status.Restarts)
	}
	delete(w.pods, "j-w-0")
	res = w.step()
	if got := res.Status.Restarts; got.Total != 1 || got.Accountable != 0 {
		t.Fatalf("restarts = %+v, want one, not charged", got)
	}
}

// A running pod deleted without grace is gone the moment the operator
// releases it: the plan takes it for gone already, records the loss (not
// charged), releases it and makes the replacement in one go, as the plan
// after the watch showed it gone would. A pod that something else holds
// too, or whose deletion has a grace period left, is waited for.
func TestPodDeletedWithoutGraceIsReplacedInOnePlan(t *testing.T) {
	start := func(edit func(*corev1.Pod)) (*world, types.UID) {
		w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
			RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
		w.runAll()
		p := w.pods["j-w-0"]
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.NewTime(w.now)), new(int64(0))
		edit(p)
		return w, p.UID
	}

	w, old := start(func(*corev1.Pod) {})
	res := w.plan()
	if len(res.ReleaseAtOnce) != 1 || res.ReleaseAtOnce[0].UID != old || released(Result{ReleasePods: res.ReleasePods}, "j-w-0") {
		t.Fatalf("want j-w-0 released at once, beside the status write, got %+v and %+v", res.ReleaseAtOnce, res.ReleasePods)
	}
	if got := res.Status.Restarts; got.Total != 1 || got.Accountable != 0 {
		t.Fatalf("restarts = %+v, want the loss counted, not charged", got)
	}
	if len(res.CreatePods) != 1 || res.CreatePods[0].Name != "j-w-0" {
		t.Fatalf("want the replacement of j-w-0 in the same plan, got %d creates", len(res.CreatePods))
	}
	w.step()
	if p := w.pods["j-w-0"]; p == nil || p.UID == old {
		t.Fatalf("want a new j-w-0 after the release, got %+v", p)
	}
	w.setPhase("j-w-0", corev1.PodRunning)
	res = w.step()
	if got := res.Status.Restarts; got.Total != 1 || res.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("restarts %+v phase %s once the replacement runs: want one, Running", got, res.Status.Phase)
	}

	for name, edit := range map[string]func(*corev1.Pod){
		"another finalizer holds it": func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, "example.com/keep") },
		"its grace period runs":      func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = new(int64(30)) },
	} {
		w, _ := start(edit)
		if res := w.plan(); len(res.CreatePods) != 0 || res.Status.Restarts.Total != 0 {
			t.Errorf("%s: %d creates, restarts %+v: want it waited for", name, len(res.CreatePods), res.Status.Restarts)
		}
	}
}

// A deletion without grace that stopped half way (the API server marked
// the pod deleting, and the operator that asked was killed before the pod
// was removed) leaves a pod nothing holds and nothing removes: the plan
// asks for the deletion again, once, and the task is replaced once it is
// gone.
func TestStrandedDeletionIsFinished(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	w.runAll()
	w.exit("j-w-1", 137)
	failed := w.pods["j-w-1"].UID
	res := w.plan()
	w.job.Status = res.Status
	// Released, then the delete's first half only.
	w.release(res.ReleasePods)
	p := w.pods["j-w-1"]
	if p == nil || p.UID != failed || observe.Tracked(p) {
		t.Fatalf("want the failed pod released and still there, got %+v", p)
	}
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.NewTime(w.now)), new(int64(0))

	res = w.plan()
	var again []PodDeletion
	for _, d := range res.DeletePods {
		if d.UID == failed {
			again = append(again, d)
		}
	}
	if len(again) != 1 || !again[0].Force || again[0].Reason != DeleteReasonStranded {
		t.Fatalf("want the stranded pod deleted again once, without grace; deletes %+v", res.DeletePods)
	}
	if res.Status.Restarts.Total != 1 {
		t.Fatalf("the restart is charged once: restarts %+v", res.Status.Restarts)
	}
	w.step()
	w.step()
	if q := w.pods["j-w-1"]; q == nil || q.UID == failed {
		t.Fatalf("want j-w-1 replaced, got %+v", q)
	}
	if w.job.Status.Restarts.Total != 1 {
		t.Fatalf("restarts %+v, want 1", w.job.Status.Restarts)
	}

	// A pod marked deleting that another finalizer holds is its owner's
	// business, not a stranded deletion.
	held := w.pods["j-w-0"]
	held.Finalizers = []string{"example.com/hold"}
	held.DeletionTimestamp, held.DeletionGracePeriodSeconds = new(metav1.NewTime(w.now)), new(int64(0))
	for _, d := range w.plan().DeletePods {
		if d.UID == held.UID && d.Reason == DeleteReasonStranded {
			t.Fatalf("a pod another finalizer holds was deleted again: %+v", d)
		}
	}
}
