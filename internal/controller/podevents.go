package controller

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// batchedOwnerEvents enqueues a pod's owning job a little after the pod
// changes, so that the changes of many pods (a role's pods starting, a node
// going away) are planned, and written to status, in one reconcile rather
// than one per pod. The delay is what Kubernetes' own Job controller does
// for the same reason.
//
// A pod that has just been asked to go, and that only the tracking
// finalizer holds back, is the exception: its job is reconciled at once,
// since its replacement waits for the finalizer to go.
func batchedOwnerEvents(delay time.Duration) handler.EventHandler {
	enqueue := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], now bool) {
		name := ""
		if ref := metav1.GetControllerOf(obj); ref != nil {
			if ref.Kind != "TrainingJob" || ref.APIVersion != musterv1.GroupVersion.String() {
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
		if delay <= 0 || now {
			q.Add(req)
			return
		}
		q.AddAfter(req, delay)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q, false)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectNew, q, heldForUs(e.ObjectOld, e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q, false)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q, false)
		},
	}
}

// heldForUs is whether a pod has just been asked to go while it carries
// the tracking finalizer, which only the operator removes.
func heldForUs(old, cur client.Object) bool {
	return old.GetDeletionTimestamp() == nil && cur.GetDeletionTimestamp() != nil &&
		slices.Contains(cur.GetFinalizers(), musterv1.FinalizerTracking)
}
