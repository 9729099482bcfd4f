package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
)

// Pod changes reach their job after the batching delay, except a tracked
// pod just asked to go, whose replacement waits for the operator: at once.
// An orphan with the finalizer still on reaches the job its label names.
func TestPodEventsBatchExceptDeletionsHeldForUs(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).WithDefaults().Obj()
	running := testutil.MakePod(job, "w", 0).Running().Obj()
	running.Finalizers = []string{musterv1.FinalizerTracking}
	deleting := running.DeepCopy()
	deleting.DeletionTimestamp = new(metav1.Now())
	untracked := deleting.DeepCopy()
	untracked.Finalizers = nil
	orphan := running.DeepCopy()
	orphan.OwnerReferences = nil

	h := batchedOwnerEvents(time.Hour, clock.RealClock{}, newExpectations(time.Minute))
	cases := map[string]struct {
		old, cur *corev1.Pod
		want     int // requests queued at once
	}{
		"a status change is batched":              {running, running, 0},
		"a tracked pod asked to go is not":        {running, deleting, 1},
		"an untracked one is":                     {running, untracked, 0},
		"a later change of a deleting pod is":     {deleting, deleting, 0},
		"an orphan still tracked reaches its job": {orphan, func() *corev1.Pod { p := orphan.DeepCopy(); p.DeletionTimestamp = new(metav1.Now()); return p }(), 1},
	}
	for name, tc := range cases {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.cur}, q)
		if got := q.Len(); got != tc.want {
			t.Errorf("%s: %d queued at once, want %d", name, got, tc.want)
		}
		if tc.want == 1 {
			if req, _ := q.Get(); req.Name != "j" || req.Namespace != "ns" {
				t.Errorf("%s: queued %v, want ns/j", name, req)
			}
		}
		q.ShutDown()
	}
}

// A pod gone reaches its job at once when it is the first of the job to go
// within the batch delay: a replacement waits for its name. Further pods
// gone meanwhile are batched; another job's are not held back by it.
func TestFirstPodGoneIsNotBatched(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h := batchedOwnerEvents(time.Second, clk, newExpectations(time.Minute))
	a := testutil.MakeJob("a", "ns").UID("a").Role("w", 3).WithDefaults().Obj()
	b := testutil.MakeJob("b", "ns").UID("b").Role("w", 1).WithDefaults().Obj()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	gone := func(job *musterv1.TrainingJob, index int32) int {
		pod := testutil.MakePod(job, "w", index).Obj()
		pod.OwnerReferences = []metav1.OwnerReference{objects.OwnerReference(job)}
		h.Delete(context.Background(), event.DeleteEvent{Object: pod}, q)
		return drain(q)
	}
	if n := gone(a, 0); n != 1 {
		t.Fatalf("the first pod gone: %d queued at once, want 1", n)
	}
	clk.SetTime(clk.Now().Add(300 * time.Millisecond))
	if n := gone(a, 1); n != 0 {
		t.Fatalf("a second pod gone within the delay: %d queued at once, want it batched", n)
	}
	if n := gone(b, 0); n != 1 {
		t.Fatalf("another job's first pod gone: %d queued at once, want 1", n)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if n := gone(a, 2); n != 1 {
		t.Fatalf("a pod gone after a quiet delay: %d queued at once, want 1", n)
	}
}

// A pod that has just failed reaches its job at once, its restart waiting on
// it, when it is the first of the job to fail or go within the delay; later
// failures within the delay, and a failed pod's further changes, are
// batched.
func TestFirstPodFailedIsNotBatched(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h := batchedOwnerEvents(time.Second, clk, newExpectations(time.Minute))
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 2).WithDefaults().Obj()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	fail := func(index int32, oldPhase corev1.PodPhase) int {
		old := testutil.MakePod(job, "w", index).Obj()
		old.OwnerReferences = []metav1.OwnerReference{objects.OwnerReference(job)}
		old.Status.Phase = oldPhase
		cur := old.DeepCopy()
		cur.Status = testutil.ExitedStatus(1, "Error", clk.Now())
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: cur}, q)
		return drain(q)
	}
	if n := fail(0, corev1.PodRunning); n != 1 {
		t.Fatalf("the first pod failed: %d queued at once, want 1", n)
	}
	clk.SetTime(clk.Now().Add(300 * time.Millisecond))
	if n := fail(1, corev1.PodRunning); n != 0 {
		t.Fatalf("a second failure within the delay: %d queued at once, want it batched", n)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if n := fail(0, corev1.PodFailed); n != 0 {
		t.Fatalf("a change of a pod that had already failed: %d queued at once, want it batched", n)
	}
	if n := fail(1, corev1.PodRunning); n != 1 {
		t.Fatalf("a failure after a quiet delay: %d queued at once, want 1", n)
	}
}

// drain takes every request queued at once off q and says how many there
// were.
func drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) int {
	n := q.Len()
	for range n {
		req, _ := q.Get()
		q.Done(req)
		q.Forget(req)
	}
	return n
}

// The pod events meet the expectations of the job that controls the pod.
func TestPodEventsMeetTheJobsExpectations(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 2).WithDefaults().Obj()
	p0 := testutil.MakePod(job, "w", 0).Obj()
	p1 := testutil.MakePod(job, "w", 1).Obj()
	now := time.Unix(100, 0)
	e := newExpectations(time.Minute)
	for _, p := range []*corev1.Pod{p0, p1} {
		p.OwnerReferences = []metav1.OwnerReference{objects.OwnerReference(job)}
		e.expectCreate(job.UID, p.Name, now)
		e.created(job.UID, p.Name, p.UID)
	}
	h := batchedOwnerEvents(time.Second, clocktesting.NewFakePassiveClock(now), e)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h.Create(context.Background(), event.CreateEvent{Object: p0}, q)
	if ok, _ := e.satisfied(job.UID, nil, now); ok {
		t.Fatal("satisfied after one of two pods was added")
	}
	h.Delete(context.Background(), event.DeleteEvent{Object: p1}, q)
	if ok, _ := e.satisfied(job.UID, nil, now); !ok {
		t.Error("not satisfied after the other pod went: it holds the job until the timeout")
	}
}
