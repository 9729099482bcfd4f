package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/plan"
)

// GangOptions are the gang backends this operator drives.
type GangOptions struct {
	// Default is the backend of jobs that name none.
	Default musterv1.GangBackend
	// Backends are the enabled backends' adapters. A job that asks for
	// another one waits, and says so.
	Backends map[musterv1.GangBackend]gang.Backend
}

// gangOf is a job's gang backend and adapter; adapter nil for None or a
// backend not enabled here.
func (r *Reconciler) gangOf(job *musterv1.TrainingJob) (musterv1.GangBackend, gang.Backend) {
	b := gang.Resolve(job, r.opts.Gang.Default)
	return b, r.opts.Gang.Backends[b]
}

// observeGang reads the job's gang objects from the cache: whether the
// current attempt's exists and what its scheduler says, and all the job's
// groups for clean-up.
func (r *Reconciler) observeGang(ctx context.Context, job *musterv1.TrainingJob) (*plan.Gang, []client.Object, error) {
	b, backend := r.gangOf(job)
	in := &plan.Gang{Backend: b}
	if b == musterv1.GangNone {
		return in, nil, nil
	}
	if backend == nil {
		in.Blocked = fmt.Sprintf("the %s gang backend is not enabled in this operator (flag --gang-backend-enable)", b)
		in.BlockedReason = musterv1.ReasonGangBackendDisabled
		return in, nil, nil
	}
	want := gang.For(job, b, gang.Placing(job.Name, &job.Status))
	in.Attempt, in.MinAvailable = want.Attempt, want.MinAvailable
	list := backend.NewGroupList()
	if err := r.client.List(ctx, list, client.InNamespace(job.Namespace), client.MatchingLabels{musterv1.LabelJobName: job.Name}); err != nil {
		return nil, nil, err
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, nil, err
	}
	var groups []client.Object
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || !metav1.IsControlledBy(obj, job) {
			continue
		}
		groups = append(groups, obj)
		if obj.GetName() == want.Name {
			in.Exists, in.State = true, backend.Observe(obj)
		}
	}
	return in, groups, nil
}

// syncGang makes the gang objects of the attempt the plan runs (or of the
// one whose gang still places it, gang.Placing), before any of its pods,
// and deletes the job's other groups: those of earlier attempts, and all
// of them once the job has finished or is suspended, so a queue holds
// nothing for a job that runs nothing. It returns the gang
// the plan's pods join, nil for none.
func (r *Reconciler) syncGang(ctx context.Context, job *musterv1.TrainingJob, groups []client.Object, res plan.Result) (*gang.Gang, error) {
	b, backend := r.gangOf(job)
	if backend == nil {
		return nil, nil
	}
	st := &res.Status
	active := !st.Finished() && !st.IsTrue(musterv1.ConditionSuspended) &&
		(job.Spec.Run.Execution == "" || job.Spec.Run.Execution == musterv1.ExecutionStart)
	want := gang.For(job, b, gang.Placing(job.Name, st))
	var errs []error
	for _, obj := range groups {
		if active && obj.GetName() == want.Name {
			continue
		}
		ctrl.LoggerFrom(ctx).V(2).Info("Deleting gang object", "podGroup", obj.GetName())
		uid := obj.GetUID()
		if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting gang object %s: %w", obj.GetName(), err))
		}
	}
	if !active {
		return nil, errors.Join(errs...)
	}
	have := map[string]bool{}
	for _, obj := range groups {
		have[obj.GetName()] = true
	}
	objs := backend.Objects(job, want)
	for i, obj := range objs {
		// The last object is the attempt's group, which the cache shows;
		// the ones before it (a native Workload) are made once per job.
		if i == len(objs)-1 && have[obj.GetName()] {
			continue
		}
		if err := r.createGangObject(ctx, job, obj); err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
	}
	return want, errors.Join(errs...)
}

// createGangObject creates one gang object. One that exists already is
// fine if it is the job's own; a foreign one with its name blocks the job.
func (r *Reconciler) createGangObject(ctx context.Context, job *musterv1.TrainingJob, obj client.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kinds, _, err := r.client.Scheme().ObjectKinds(obj)
		if err == nil && len(kinds) > 0 {
			kind = kinds[0].Kind
		}
	}
	what := kind + " " + obj.GetName()
	err := r.client.Create(ctx, obj)
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).V(2).Info("Created gang object", "object", what)
		return nil
	case apierrors.IsAlreadyExists(err):
		// Ours, made by an earlier reconcile the cache has not shown yet,
		// or someone else's, which blocks the job until it is gone.
		if r.foreignObject(ctx, job, obj) {
			r.refused(job, plan.CreateFailure{Object: what, NameTaken: true, Err: err})
		}
		return nil
	default:
		r.refused(job, plan.CreateFailure{Object: what, Err: err})
		r.warn(job, musterv1.EventReasonGangCreateFailed, "creating %s: %v", what, err)
		return fmt.Errorf("creating %s: %w", what, err)
	}
}

// foreignObject is whether the object named like obj belongs to someone
// other than the job, asked of the API server.
func (r *Reconciler) foreignObject(ctx context.Context, job *musterv1.TrainingJob, obj client.Object) bool {
	got, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false
	}
	if err := r.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		return false
	}
	return !metav1.IsControlledBy(got, job)
}

// decorate ties the plan's task pods to the gang; the rendezvous store
// is never part of a gang.
func decorate(backend gang.Backend, g *gang.Gang, pods []*corev1.Pod) {
	if g == nil {
		return
	}
	for _, pod := range pods {
		if pod.Labels[musterv1.LabelComponent] == "" {
			backend.Decorate(pod, g)
		}
	}
}

// gangKinds are the kinds of the enabled backends' gang objects, sorted,
// for the cache and the watches.
func gangKinds(o GangOptions) []client.Object {
	names := make([]string, 0, len(o.Backends))
	for b := range o.Backends {
		names = append(names, string(b))
	}
	sort.Strings(names)
	var out []client.Object
	for _, n := range names {
		out = append(out, o.Backends[musterv1.GangBackend(n)].NewGroup())
	}
	return out
}
