package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
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

	h := batchedOwnerEvents(time.Hour)
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
