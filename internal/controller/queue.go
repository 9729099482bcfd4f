package controller

import (
	"context"
	"fmt"
	"time"

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
	// (its pod sets' counts and queue), computed once per reconcile; an
	// elastic job's matches when only its counts differ, since it is
	// resized without stopping.
	matches    bool
	placements map[string]kueue.Placement
	// left: the job's queue-name label was removed; its Workload is
	// finished, so it holds no quota for a job that no longer waits for
	// it.
	left bool
	// next is an elastic job's pending slice, which is to replace
	// workload at the job's larger size, and nextState its state.
	next      *unstructured.Unstructured
	nextState kueue.State
	// want are the podSets' counts the job asks for now.
	want map[string]int64
	// recheck is when to look again at a job that runs on the admission of
	// the Workload its new slice replaced (kueue.SliceHandover).
	recheck time.Duration
}

// observeQueue reads the Workload of a job in a Kueue LocalQueue. A job
// without the queue-name label, or an operator without Kueue, has none.
func (r *Reconciler) observeQueue(ctx context.Context, job *musterv1.TrainingJob) (*plan.Admission, *queued, error) {
	if !r.opts.Kueue {
		return nil, nil, nil
	}
	chain, err := r.workloads(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	if kueue.QueueName(job) == "" {
		return nil, leftQueue(chain.Current), nil
	}
	in := &plan.Admission{Queue: kueue.QueueName(job), Workload: kueue.WorkloadName(job)}
	wl := chain.Current
	if wl == nil {
		in.Reason, in.Message = musterv1.ReasonWaitingForAdmission, "waiting for LocalQueue "+in.Queue+" to admit the job (making its Kueue Workload)"
		return in, &queued{}, nil
	}
	in.Workload = wl.GetName()
	want, err := kueue.Desired(job, nil)
	if err != nil {
		return nil, nil, err
	}
	elastic := kueue.Elastic(job)
	q := &queued{workload: wl, state: kueue.Observe(wl), matches: kueue.Matches(wl, want) || elastic && kueue.Resized(wl, want),
		want: kueue.Counts(want)}
	if elastic && chain.Next != nil {
		q.next, q.nextState = chain.Next, kueue.Observe(chain.Next)
	}
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
		return r.admitted(ctx, in, q, wl, st, elastic)
	}
	if prev := chain.Replaced; elastic && q.matches && !st.Evicted && prev != nil {
		// Kueue finished the Workload the slice replaces and is about to
		// admit the slice: the job runs on as that one admitted it.
		before := kueue.Observe(prev)
		if left := kueue.SliceHandover - r.opts.Clock.Now().Sub(before.FinishedAt); left > 0 {
			q.recheck = left
			return r.admitted(ctx, in, q, prev, before, elastic)
		}
	}
	return in, q, nil
}

// admitted is the admission of a job that runs under wl, in state st:
// where its roles' pods go, and, for an elastic job, the counts wl holds of
// the roles it wants more of.
func (r *Reconciler) admitted(ctx context.Context, in *plan.Admission, q *queued, wl *unstructured.Unstructured, st kueue.State,
	elastic bool) (*plan.Admission, *queued, error) {
	flavors, err := r.flavors(ctx)
	if err != nil {
		return nil, nil, err
	}
	if q.placements, err = kueue.Placements(st, flavors); err != nil {
		in.Reason, in.Message = musterv1.ReasonWaitingForAdmission, err.Error()
		return in, q, nil
	}
	in.Admitted, in.ClusterQueue, in.Counts = true, st.ClusterQueue, st.Counts
	if elastic {
		// The job runs within what its Workload holds until a larger slice
		// is admitted.
		in.Counts = admittedCounts(kueue.Counts(wl), q.want)
	}
	return in, q, nil
}

// admittedCounts are the counts an elastic job's Workload holds of the
// roles it wants more of.
func admittedCounts(have, want map[string]int64) map[string]int32 {
	var out map[string]int32
	for name, n := range have {
		if n < want[name] {
			if out == nil {
				out = map[string]int32{}
			}
			out[name] = int32(n)
		}
	}
	return out
}

// workloads are the job's own Workloads: the current one and, for an
// elastic job that is growing, the slice that is to replace it.
func (r *Reconciler) workloads(ctx context.Context, job *musterv1.TrainingJob) (kueue.Chain, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueue.WorkloadKind.GroupVersion().WithKind("WorkloadList"))
	if err := r.client.List(ctx, list, client.InNamespace(job.Namespace), client.MatchingLabels{musterv1.LabelJobName: job.Name}); err != nil {
		return kueue.Chain{}, err
	}
	var own []*unstructured.Unstructured
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], job) {
			own = append(own, &list.Items[i])
		}
	}
	return kueue.FindChain(own), nil
}

// leftQueue is the Workload of a job whose queue-name label was removed,
// while it is not finished yet; nil for a job that never had one.
func leftQueue(wl *unstructured.Unstructured) *queued {
	if wl == nil {
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
	if q.workload != nil && kueue.Elastic(job) {
		if resized, err := r.resizeWorkload(ctx, job, q, js); resized || err != nil {
			return err
		}
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

// resizeWorkload resizes an elastic job's Workload without stopping the
// job, as kueue.DecideResize says; false when that has nothing to do.
func (r *Reconciler) resizeWorkload(ctx context.Context, job *musterv1.TrainingJob, q *queued, js kueue.JobState) (bool, error) {
	var next *kueue.State
	var nextCounts map[string]int64
	if q.next != nil {
		next, nextCounts = &q.nextState, kueue.Counts(q.next)
	}
	have, wantCounts := kueue.Counts(q.workload), q.want
	step := kueue.DecideResize(q.state, have, wantCounts, next, nextCounts, js)
	log := ctrl.LoggerFrom(ctx)
	switch step {
	case kueue.StepResize:
		log.V(2).Info("Resizing Kueue Workload in place", "workload", q.workload.GetName(), "from", have, "to", wantCounts)
		return true, r.setCounts(ctx, job, q.workload, wantCounts)
	case kueue.StepResizeSlice:
		return true, r.setCounts(ctx, job, q.next, wantCounts)
	case kueue.StepSlice:
		slice, err := kueue.Slice(job, q.workload, r.priority(ctx, job))
		if err != nil {
			return true, err
		}
		log.V(2).Info("Asking Kueue for a larger slice", "workload", slice.GetName(), "replacing", q.workload.GetName())
		if err := r.client.Create(ctx, slice); err != nil && !apierrors.IsAlreadyExists(err) {
			r.warn(job, musterv1.EventReasonWaitingForAdmission, "creating Kueue Workload slice %s: %v", slice.GetName(), err)
			return true, fmt.Errorf("creating Kueue Workload slice: %w", err)
		}
		r.recorder.Eventf(job, nil, corev1.EventTypeNormal, string(musterv1.EventReasonScalingUp), "Create",
			"asked LocalQueue %s to admit the job at its new size (Workload %s); it runs at its admitted size meanwhile", kueue.QueueName(job), slice.GetName())
		return true, nil
	case kueue.StepDropSlice:
		uid := q.next.GetUID()
		return true, client.IgnoreNotFound(r.client.Delete(ctx, q.next, client.Preconditions{UID: &uid}))
	case kueue.StepFinishReplaced:
		return true, r.patchWorkloadStatus(ctx, q.workload, kueue.StatusEdit(step, q.state, js, metav1.NewTime(r.opts.Clock.Now())))
	}
	return false, nil
}

// setCounts changes a Workload's podSets' counts. Kueue refuses a count
// it does not allow (a scale-up of an admitted Workload, or any resize
// without its ElasticJobsViaWorkloadSlices feature): the job is told, and
// the next reconcile tries again.
func (r *Reconciler) setCounts(ctx context.Context, job *musterv1.TrainingJob, wl *unstructured.Unstructured, counts map[string]int64) error {
	next := wl.DeepCopy()
	kueue.SetCounts(next, counts)
	err := r.client.Patch(ctx, next, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		r.warn(job, musterv1.EventReasonWaitingForAdmission, "Kueue refused to resize Workload %s (is its ElasticJobsViaWorkloadSlices feature on?): %v",
			wl.GetName(), err)
	}
	return fmt.Errorf("resizing Kueue Workload %s: %w", wl.GetName(), err)
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
