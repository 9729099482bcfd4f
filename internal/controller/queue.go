package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/queue/kueue"
)

// queued is a job's Kueue Workload as observed, and where its admitted
// roles' pods go.
type queued struct {
	workload *unstructured.Unstructured
	state    kueue.State
	// matches is whether the Workload still describes the job as it is
	// (its pod sets' counts and queue), computed once per reconcile.
	matches    bool
	placements map[string]kueue.Placement
	// left: the job's queue-name label was removed; its Workload is
	// finished, so it holds no quota for a job that no longer waits for
	// it.
	left bool
}

// observeQueue reads the Workload of a job in a Kueue LocalQueue. A job
// without the queue-name label, or an operator without Kueue, has none.
func (r *Reconciler) observeQueue(ctx context.Context, job *musterv1.TrainingJob) (*plan.Admission, *queued, error) {
	if !r.opts.Kueue {
		return nil, nil, nil
	}
	name := kueue.WorkloadName(job)
	if kueue.QueueName(job) == "" {
		return nil, r.leftQueue(ctx, job, name), nil
	}
	in := &plan.Admission{Queue: kueue.QueueName(job), Workload: name}
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(kueue.WorkloadKind)
	err := r.client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, wl)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(wl, job)):
		in.Reason, in.Message = musterv1.ReasonWaitingForAdmission, "waiting for LocalQueue "+in.Queue+" to admit the job (making its Kueue Workload)"
		return in, &queued{}, nil
	case err != nil:
		return nil, nil, err
	}
	want, err := kueue.Desired(job, nil)
	if err != nil {
		return nil, nil, err
	}
	q := &queued{workload: wl, state: kueue.Observe(wl), matches: kueue.Matches(wl, want)}
	st := q.state
	switch {
	case st.Evicted:
		in.Reason, in.Message = musterv1.ReasonEvicted, "Kueue evicted the job ("+st.Reason+"): "+st.Message
	case !q.matches:
		in.Reason, in.Message = musterv1.ReasonWaitingForAdmission, "the job's size or queue changed: queueing it again as it is now"
	case !st.Admitted:
		in.Reason = musterv1.ReasonWaitingForAdmission
		in.Message = "waiting for LocalQueue " + in.Queue + " to admit the job"
		if st.Message != "" {
			in.Message += ": " + st.Message
		}
	default:
		flavors, err := r.flavors(ctx)
		if err != nil {
			return nil, nil, err
		}
		if q.placements, err = kueue.Placements(st, flavors); err != nil {
			in.Reason, in.Message = musterv1.ReasonWaitingForAdmission, err.Error()
			return in, q, nil
		}
		in.Admitted, in.ClusterQueue, in.Counts = true, st.ClusterQueue, st.Counts
	}
	return in, q, nil
}

// leftQueue is the Workload of a job whose queue-name label was removed,
// while it is not finished yet; nil for a job that never had one. An error
// reading it (but NotFound) is taken for none: the next reconcile sees it.
func (r *Reconciler) leftQueue(ctx context.Context, job *musterv1.TrainingJob, name string) *queued {
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(kueue.WorkloadKind)
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, wl); err != nil || !metav1.IsControlledBy(wl, job) {
		return nil
	}
	st := kueue.Observe(wl)
	if st.Finished {
		return nil
	}
	return &queued{workload: wl, state: st, matches: true, left: true}
}

func (r *Reconciler) flavors(ctx context.Context) (map[string]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueue.ResourceFlavorKind.GroupVersion().WithKind("ResourceFlavorList"))
	if err := r.client.List(ctx, list); err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetName()] = &list.Items[i]
	}
	return out, nil
}

// syncQueue keeps the job's Workload in step with the plan, as Kueue
// expects of a job's controller (kueue.Decide says how).
func (r *Reconciler) syncQueue(ctx context.Context, job *musterv1.TrainingJob, q *queued, pods []*corev1.Pod, res plan.Result) error {
	if q == nil {
		return nil
	}
	st := &res.Status
	js := kueue.JobState{Finished: st.Finished(), Failed: st.IsTrue(musterv1.ConditionFailed),
		Running: st.IsTrue(musterv1.ConditionRunning), Active: active(pods), LeftQueue: q.left}
	if st.Completion != nil {
		js.Message = st.Completion.Message
	}
	step := kueue.Decide(q.workload != nil, q.state, q.matches, js)
	log := ctrl.LoggerFrom(ctx)
	switch step {
	case kueue.StepNone:
		return nil
	case kueue.StepCreate:
		want, err := kueue.Desired(job, r.priority(ctx, job))
		if err != nil {
			return err
		}
		log.V(2).Info("Creating Kueue Workload", "workload", want.GetName())
		if err := r.client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			r.warn(job, musterv1.EventReasonWaitingForAdmission, "creating Kueue Workload %s: %v", want.GetName(), err)
			return fmt.Errorf("creating Kueue Workload: %w", err)
		}
		return nil
	case kueue.StepReplace:
		log.V(2).Info("Replacing Kueue Workload: the job's size or queue changed", "workload", q.workload.GetName())
		uid := q.workload.GetUID()
		return client.IgnoreNotFound(r.client.Delete(ctx, q.workload, client.Preconditions{UID: &uid}))
	}
	return r.patchWorkloadStatus(ctx, q.workload, kueue.StatusEdit(step, q.state, js, metav1.NewTime(r.opts.Clock.Now())))
}

// active is whether any of the job's pods may still run.
func active(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true
		}
	}
	return false
}

// priority is the value of the job's PriorityClass, for its Workload.
func (r *Reconciler) priority(ctx context.Context, job *musterv1.TrainingJob) *int32 {
	name := job.Spec.Scheduling.PriorityClassName
	if name == "" {
		return nil
	}
	pc := &schedulingv1.PriorityClass{}
	if err := r.opts.APIReader.Get(ctx, client.ObjectKey{Name: name}, pc); err != nil {
		return nil
	}
	return &pc.Value
}

// patchWorkloadStatus changes a Workload's status with an optimistic
// lock: if Kueue wrote it meanwhile, the next reconcile decides again.
func (r *Reconciler) patchWorkloadStatus(ctx context.Context, wl *unstructured.Unstructured, edit func(status map[string]any)) error {
	next := wl.DeepCopy()
	status, _, _ := unstructured.NestedMap(next.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	edit(status)
	if err := unstructured.SetNestedMap(next.Object, status, "status"); err != nil {
		return err
	}
	err := r.client.Status().Patch(ctx, next, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// place sends each admitted role's new pods where Kueue's flavors say.
func place(placements map[string]kueue.Placement, pods []*corev1.Pod) {
	for _, pod := range pods {
		if p, ok := placements[pod.Labels[musterv1.LabelRole]]; ok {
			kueue.Place(pod, p)
		}
	}
}

func workloadObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kueue.WorkloadKind)
	return u
}

func resourceFlavorObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kueue.ResourceFlavorKind)
	return u
}
