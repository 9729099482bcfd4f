package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// batchedOwnerEvents enqueues a pod's owning job a little after the pod
// changes, so that the changes of many pods (a role's pods starting, a node
// going away) are planned, and written to status, in one reconcile rather
// than one per pod. The delay is what Kubernetes' own Job controller does
// for the same reason.
//
// Three exceptions, because a replacement waits on them: a pod that has
// just been asked to go, and that only the tracking finalizer holds back,
// has its job reconciled at once; so does a pod that has just failed, and a
// pod that is gone, when it is the first of its job to fail or go for a
// while (a gone pod's replacement can take its name only now). Further
// failures and deletions within the delay are batched as before, so a job
// losing many pods at once (suspended, a node gone, a collective that
// failed together) is still planned in a few reconciles, not one per pod.
//
// Each pod added or gone also meets its job's expectations of it (seen).
func batchedOwnerEvents(delay time.Duration, clk clock.PassiveClock, seen podObserver) handler.EventHandler {
	losses := &leadingEdge{window: delay, clock: clk, last: map[types.NamespacedName]time.Time{}}
	observe := func(obj client.Object, gone bool) {
		if ref, ours := jobOwner(obj); ref != nil && ours {
			seen.podSeen(ref.UID, obj.GetName(), obj.GetUID(), gone)
		}
	}
	enqueue := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], now, lost bool) {
		name := ""
		if ref, ours := jobOwner(obj); ref != nil {
			if !ours {
				return
			}
			name = ref.Name
		} else if slices.Contains(obj.GetFinalizers(), musterv1.FinalizerTracking) {
			// Orphaned with our finalizer still on: its job's name is in
			// its label, and that job's reconcile lets it go.
			name = obj.GetLabels()[musterv1.LabelJobName]
		}
		if name == "" {
			return
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}
		if delay <= 0 || now || (lost && losses.first(req.NamespacedName)) {
			q.Add(req)
			return
		}
		q.AddAfter(req, delay)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			observe(e.Object, false)
			enqueue(e.Object, q, false, false)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectNew, q, heldForUs(e.ObjectOld, e.ObjectNew), justFailed(e.ObjectOld, e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			observe(e.Object, true)
			enqueue(e.Object, q, false, true)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q, false, false)
		},
	}
}

// jobOwner is the pod's controller, if any, and whether it is a
// TrainingJob, of any version: a pod an earlier operator made names the
// version that operator worked in.
func jobOwner(obj client.Object) (*metav1.OwnerReference, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "TrainingJob" {
		return ref, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return ref, err == nil && gv.Group == musterv1.GroupVersion.Group
}

// podObserver is told of every pod the cache takes in or lets go: the
// reconciler's expectations.
type podObserver interface {
	podSeen(job types.UID, name string, uid types.UID, gone bool)
}

// heldForUs is whether a pod has just been asked to go while it carries
// the tracking finalizer, which only the operator removes.
func heldForUs(old, cur client.Object) bool {
	return old.GetDeletionTimestamp() == nil && cur.GetDeletionTimestamp() != nil &&
		slices.Contains(cur.GetFinalizers(), musterv1.FinalizerTracking)
}

// justFailed is whether a pod has just failed: a restart waits on it.
func justFailed(old, cur client.Object) bool {
	o, ok1 := old.(*corev1.Pod)
	c, ok2 := cur.(*corev1.Pod)
	return ok1 && ok2 && o.Status.Phase != corev1.PodFailed && c.Status.Phase == corev1.PodFailed
}

// leadingEdge says whether an event is the first of its job within a
// window: the first goes at once, the rest wait for the batch.
type leadingEdge struct {
	window time.Duration
	clock  clock.PassiveClock

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// maxLeadingEdges bounds the jobs remembered; past it, entries older than
// the window are swept, so memory follows the jobs losing pods right now.
const maxLeadingEdges = 1024

func (l *leadingEdge) first(job types.NamespacedName) bool {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.last[job]; ok && now.Sub(at) < l.window {
		return false
	}
	if len(l.last) >= maxLeadingEdges {
		for k, at := range l.last {
			if now.Sub(at) >= l.window {
				delete(l.last, k)
			}
		}
	}
	l.last[job] = now
	return true
}
