package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/testutil"
)

// behindCache is a pod cache that has yet to show some pods.
type behindCache struct {
	client.Client
	hidden map[string]bool
}

func (c behindCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok {
		pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return c.hidden[p.Name] })
	}
	return nil
}

// running is a harness whose job runs its two workers, planned by one
// operator process.
func running(t *testing.T) *harness {
	t.Helper()
	return runningWith(t, interceptor.Funcs{})
}

// runningWith is running with the test's interceptors.
func runningWith(t *testing.T, funcs interceptor.Funcs) *harness {
	t.Helper()
	return runningWithOptions(t, funcs, Options{})
}

// runningWithOptions is runningWith under the operator's opts.
func runningWithOptions(t *testing.T, funcs interceptor.Funcs, opts Options) *harness {
	t.Helper()
	h := newHarness(t, twoWorkers(), funcs, opts)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	h.setPhase("j-worker-0", corev1.PodRunning)
	h.setPhase("j-worker-1", corev1.PodRunning)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("phase %s, want Running", job.Status.Phase)
	}
	return h
}

// An operator that has just started reads a status another process wrote,
// with a pod cache that has yet to show one of the running pods. Planned
// on that cache, the pod reads as vanished and a restart is counted that
// never happened; the operator lists the job's pods from the API server
// first, and waits for its cache.
func TestAStartedOperatorWaitsForAPodCacheBehindTheStatus(t *testing.T) {
	h := running(t)
	writes := h.statusWrites
	cache := behindCache{Client: h.c, hidden: map[string]bool{"j-worker-1": true}}
	h.r = NewReconciler(cache, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	job := h.job()
	if job.Status.Restarts.Total != 0 || h.statusWrites != writes || h.creates != 2 || res.RequeueAfter == 0 {
		t.Fatalf("a cache behind the status counted a restart: restarts %+v, %d status writes, %d creates, requeue %v",
			job.Status.Restarts, h.statusWrites-writes, h.creates, res.RequeueAfter)
	}
	// Still behind: the job waits for the pod the API server showed.
	if _, err := h.reconcile(); err != nil || h.statusWrites != writes {
		t.Fatalf("planned on a cache still behind: %v, %d status writes", err, h.statusWrites-writes)
	}
	// Caught up: nothing to do.
	cache.hidden = nil
	h.readThrough(cache)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 0 || job.Status.Phase != musterv1.PhaseRunning || h.creates != 2 {
		t.Fatalf("after the cache caught up: restarts %+v, phase %s, %d creates", job.Status.Restarts, job.Status.Phase, h.creates)
	}
}

// The same cache, with the pod truly gone (its finalizer was taken off by
// hand and it was deleted): the list confirms it, and the restart counts.
func TestAVanishedPodConfirmedGoneIsCounted(t *testing.T) {
	h := running(t)
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.key.Namespace, Name: "j-worker-1"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Finalizers = nil
	if err := h.c.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 1 {
		t.Fatalf("a pod confirmed gone: restarts %+v, want one", job.Status.Restarts)
	}
}

// Someone removes the label Muster's cache finds a running pod by: the pod
// leaves the cache but is still the job's. It is not taken for vanished:
// it is found by its name, its labels are put back, and the job says so.
// A pod made to restart in place, whose attempt variables follow its
// labels, has its attempts put back from the job's status.
func TestAPodWhoseLabelsWereChangedIsFoundAndMended(t *testing.T) {
	for name, opts := range map[string]Options{
		"re-created": {},
		"in place":   {InPlace: plan.InPlaceSupport{WatcherImage: "m", Default: musterv1.RestartModeInPlace}},
	} {
		t.Run(name, func(t *testing.T) { relabelledPodIsMended(t, opts) })
	}
}

func relabelledPodIsMended(t *testing.T, opts Options) {
	h := runningWithOptions(t, interceptor.Funcs{}, opts)
	ctx := context.Background()
	pod := &corev1.Pod{}
	key := types.NamespacedName{Namespace: h.key.Namespace, Name: "j-worker-1"}
	if err := h.c.Get(ctx, key, pod); err != nil {
		t.Fatal(err)
	}
	want := pod.Labels
	pod.Labels = map[string]string{"app": "mine"}
	if err := h.c.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 0 || h.creates != 2 {
		t.Fatalf("a relabelled pod taken for lost: restarts %+v, %d creates", job.Status.Restarts, h.creates)
	}
	if err := h.c.Get(ctx, key, pod); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q put back", k, pod.Labels[k], v)
		}
	}
	if pod.Labels["app"] != "mine" {
		t.Errorf("a label of the user's own was lost: %v", pod.Labels)
	}
	if !slices.ContainsFunc(h.events(), func(e string) bool { return strings.Contains(e, string(musterv1.EventReasonPodLabelsChanged)) }) {
		t.Errorf("no %s event", musterv1.EventReasonPodLabelsChanged)
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if job := h.job(); job.Status.Restarts.Total != 0 || job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("after the labels were put back: restarts %+v, phase %s", job.Status.Restarts, job.Status.Phase)
	}
}

// The operator's rights in a job's namespace are gone (its Role there was
// deleted first, as a namespace's deletion may do) while the job's pods
// are being deleted, one of them failed: the status write (or, for an
// operator that has just started, the list that confirms its cache) is
// refused, and the pods, whose ends can no longer be recorded, are
// released, or the namespace would stay Terminating for ever.
func TestPodsAreReleasedWhenTheNamespaceIsNoLongerTheOperators(t *testing.T) {
	for _, started := range []bool{false, true} {
		forbidden := false
		refuse := func(obj client.Object) error {
			if !forbidden {
				return nil
			}
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("no Role"))
		}
		h := runningWith(t, interceptor.Funcs{
			SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
				return refuse(obj)
			},
		})
		failed := &corev1.Pod{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.key.Namespace, Name: "j-worker-0"}, failed); err != nil {
			t.Fatal(err)
		}
		failed.Status = testutil.ExitedStatus(1, "Error", time.Unix(1000, 0))
		if err := h.c.Status().Update(context.Background(), failed); err != nil {
			t.Fatal(err)
		}
		for _, p := range h.pods() {
			if err := h.c.Delete(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
		}
		forbidden = true
		if started {
			h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock, APIReader: refusingReader{h.c, refuse}})
		}
		if _, err := h.reconcile(); !apierrors.IsForbidden(err) {
			t.Fatalf("started %t: reconcile: %v, want Forbidden", started, err)
		}
		if left := h.pods(); len(left) != 0 {
			t.Errorf("started %t: %d pods still held", started, len(left))
		}
	}
}

// refusingReader lists through refuse first.
type refusingReader struct {
	client.Reader
	refuse func(client.Object) error
}

func (r refusingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.refuse(&corev1.Pod{}); err != nil {
		return err
	}
	return r.Reader.List(ctx, list, opts...)
}

// readThrough has the reconciler read the cluster through c from now on.
func (h *harness) readThrough(c client.Client) {
	h.r.client, h.r.listJobPods = c, listThrough(c)
}

// olderCache shows some pods as they were.
type olderCache struct {
	client.Client
	was map[string]corev1.Pod
}

func (c olderCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok {
		for i, p := range pods.Items {
			if old, ok := c.was[p.Name]; ok {
				pods.Items[i] = old
			}
		}
	}
	return nil
}

// An operator that has just started reads a job whose spec changed, with a
// pod cache that still shows running a pod the API server shows being
// deleted (the same instance, an older state of it). Acting on that, it
// would take the deleting pod for the task's current one and count its
// end later as a restart; it waits for its cache instead.
func TestAStartedOperatorWaitsForAPodsNewerState(t *testing.T) {
	h := running(t)
	was := map[string]corev1.Pod{}
	for _, p := range h.pods() {
		was[p.Name] = p
	}
	pod := was["j-worker-1"]
	if err := h.c.Delete(context.Background(), &pod); err != nil {
		t.Fatal(err)
	}
	// The fake client keeps no generations; the API server's would be
	// observed by now.
	suspendedAfterRestart(t, h)
	writes := h.statusWrites
	cache := olderCache{Client: h.c, was: map[string]corev1.Pod{"j-worker-1": was["j-worker-1"]}}
	h.r = NewReconciler(cache, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	res, err := h.reconcile()
	var first corev1.Pod
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: pod.Namespace, Name: "j-worker-0"}, &first); err != nil {
		t.Fatal(err)
	}
	if err != nil || h.statusWrites != writes || first.DeletionTimestamp != nil || res.RequeueAfter == 0 {
		t.Fatalf("planned on an older state of a pod: %v, %d status writes, worker 0 deleted %t, requeue %v",
			err, h.statusWrites-writes, first.DeletionTimestamp != nil, res.RequeueAfter)
	}
	// Caught up: the suspension goes on.
	h.readThrough(h.c)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites == writes {
		t.Fatal("no status written once the cache caught up")
	}
}

// suspendedAfterRestart is a running job whose spec has changed (it is
// suspended) since its status was written, as an operator that has just
// started finds it: its first plan is confirmed against the API server.
func suspendedAfterRestart(t *testing.T, h *harness) {
	t.Helper()
	job := h.job()
	job.Status.ObservedGeneration = 1
	if err := h.c.Status().Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	job = h.job()
	job.Spec.Run.Execution = musterv1.ExecutionSuspend
	if err := h.c.Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
}

// A pod whose newer state differs from the cached one only in what no
// plan reads (its readiness) holds nothing up: a big job starting, or one
// pod flapping its readiness, would otherwise hold every plan of the job.
func TestAChangeNoPlanReadsHoldsNoPlan(t *testing.T) {
	h := running(t)
	ctx := context.Background()
	was := map[string]corev1.Pod{}
	for _, p := range h.pods() {
		was[p.Name] = p
	}
	pod := was["j-worker-1"]
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	if err := h.c.Status().Update(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	suspendedAfterRestart(t, h)
	writes := h.statusWrites
	cache := olderCache{Client: h.c, was: map[string]corev1.Pod{"j-worker-1": was["j-worker-1"]}}
	h.r = NewReconciler(cache, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites == writes {
		t.Fatal("a readiness change the plan does not read held the plan")
	}
	if job := h.job(); !job.Status.IsTrue(musterv1.ConditionSuspended) {
		t.Fatalf("the job was not suspended: %+v", job.Status.Conditions)
	}
}

// A job whose pod cache stays behind is told, once per run of waits.
func TestACacheBehindForSeveralPlansIsTold(t *testing.T) {
	h := running(t)
	suspendedAfterRestart(t, h)
	cache := behindCache{Client: h.c, hidden: map[string]bool{"j-worker-1": true}}
	h.r = NewReconciler(cache, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	told := func() int {
		n := 0
		for _, e := range h.events() {
			if strings.Contains(e, string(musterv1.EventReasonCacheBehind)) {
				n++
			}
		}
		return n
	}
	for i := 1; i < cacheWaitsToTell; i++ {
		h.r.expect.forget(h.job().UID) // each plan gets as far as the check
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	if n := told(); n != 0 {
		t.Fatalf("told after %d waits", cacheWaitsToTell-1)
	}
	for range 3 {
		h.r.expect.forget(h.job().UID)
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	if n := told(); n != 1 {
		t.Fatalf("told %d times in one run of waits, want once", n)
	}
}

// A plan that only restarts pods in place changes them as surely as one
// that deletes them: made by an operator that has just started, it waits
// for a pod cache confirmed against the API server (a stale cache shows an
// instance that has moved on as the one to restart).
func TestAnInPlaceRestartNeedsAConfirmedCache(t *testing.T) {
	r := NewReconciler(nil, nil, Options{})
	job := testutil.MakeJob("j", "ns").Role("w", 1).Obj()
	job.Status.ObservedGeneration = 1
	res := &plan.Result{Status: job.Status, RestartPods: []plan.PodRestart{{Name: "j-w-0", UID: "u", Attempt: 1, TaskAttempt: 2, Restarts: 1}}}
	if !r.needsConfirming(job, res) {
		t.Error("a plan that restarts a pod in place was acted on without a confirmed cache")
	}
	res.RestartPods = nil
	if r.needsConfirming(job, res) {
		t.Error("a plan that changes nothing needs no confirming")
	}
}

// A restart in place asked from a job a write behind would move pods back
// to the attempt before, with no status write to catch the stale view:
// like a create or a delete, it is taken only from the newest job.
func TestARestartInPlaceNeedsTheNewestJob(t *testing.T) {
	if !needsFreshJob(plan.Result{RestartPods: []plan.PodRestart{{Name: "j-w-0", UID: "u", Attempt: 1}}}) {
		t.Fatal("a plan that restarts pods in place must be checked against the newest job")
	}
	if needsFreshJob(plan.Result{}) {
		t.Fatal("a plan that acts on no pod needs no check")
	}
}

// The attempts of a pod that restarts in place come from the job's status:
// the task's instance, or the next one while the task restarts into it.
func TestTaskLabelsOfAnInPlacePodComeFromStatus(t *testing.T) {
	job := twoWorkers()
	job.Status.Attempt = 3
	follow := func(name, label string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + label + "']"}}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-worker-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{
		{Name: musterv1.EnvJobName, Value: "j"}, {Name: musterv1.EnvRoleName, Value: "worker"}, {Name: musterv1.EnvTaskIndex, Value: "1"},
		follow(musterv1.EnvJobAttempt, musterv1.LabelJobAttempt), follow(musterv1.EnvTaskAttempt, musterv1.LabelTaskAttempt),
	}}}}}
	for state, want := range map[musterv1.TaskState]string{musterv1.TaskRunning: "2", musterv1.TaskRestarting: "3"} {
		job.Status.Roles = []musterv1.RoleStatus{{Name: "worker", Tasks: []musterv1.TaskStatus{{Index: 0, Attempts: 1}, {Index: 1, Attempts: 2, State: state}}}}
		labels, ok := taskLabels(job, pod)
		if !ok || labels[musterv1.LabelTaskAttempt] != want || labels[musterv1.LabelJobAttempt] != "3" {
			t.Errorf("%s: labels %v (%v), want task attempt %s, job attempt 3", state, labels, ok, want)
		}
	}
	job.Status.Roles = nil
	if labels, ok := taskLabels(job, pod); ok {
		t.Errorf("a task status does not know: labels %v", labels)
	}
}
