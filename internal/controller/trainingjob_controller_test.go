package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// harness is a reconciler over a fake client, with a fake clock and
// recorder, and counts of the writes it made.
type harness struct {
	t            *testing.T
	c            client.WithWatch
	r            *Reconciler
	rec          *events.FakeRecorder
	key          types.NamespacedName
	mu           sync.Mutex // creates run in parallel
	statusWrites int
	creates      int
}

func newHarness(t *testing.T, job *musterv1.TrainingJob, funcs interceptor.Funcs, opts Options) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := musterv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, rec: events.NewFakeRecorder(100), key: client.ObjectKeyFromObject(job)}
	// Count what reaches the API, after the test's own interceptors.
	inner := funcs
	funcs.SubResourcePatch = func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
		if inner.SubResourcePatch != nil {
			if err := inner.SubResourcePatch(ctx, c, sub, obj, p, o...); err != nil {
				return err
			}
		}
		h.statusWrites++
		return c.SubResource(sub).Patch(ctx, obj, p, o...)
	}
	funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
		if inner.Create != nil {
			if err := inner.Create(ctx, c, obj, o...); err != nil {
				return err
			}
		}
		if _, ok := obj.(*corev1.Pod); ok {
			h.mu.Lock()
			h.creates++
			// The fake client sets no UID; the API server always does,
			// and the planner tells pod instances apart by it.
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", h.creates)))
			h.mu.Unlock()
		}
		return c.Create(ctx, obj, o...)
	}
	base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job).WithStatusSubresource(&musterv1.TrainingJob{}).
		WithIndex(&corev1.Pod{}, podJobIndex, podJob).Build()
	h.c = interceptor.NewClient(base, funcs)
	opts.Clock = clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h.r = NewReconciler(h.c, h.rec, opts)
	return h
}

func (h *harness) reconcile() (ctrl.Result, error) {
	h.t.Helper()
	return h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key})
}

func (h *harness) job() *musterv1.TrainingJob {
	h.t.Helper()
	job := &musterv1.TrainingJob{}
	if err := h.c.Get(context.Background(), h.key, job); err != nil {
		h.t.Fatal(err)
	}
	return job
}

func (h *harness) pods() []corev1.Pod {
	h.t.Helper()
	var list corev1.PodList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.key.Namespace)); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// setPhase moves a pod to phase, as its kubelet would.
func (h *harness) setPhase(name string, phase corev1.PodPhase) {
	h.t.Helper()
	pod := &corev1.Pod{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.key.Namespace, Name: name}, pod); err != nil {
		h.t.Fatal(err)
	}
	pod.Status.Phase = phase
	if err := h.c.Status().Update(context.Background(), pod); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// staleJob is the API server's answer to a status write made from an
// outdated job.
func staleJob() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "muster.dev", Resource: "trainingjobs"}, "j", errors.New("stale"))
}

func twoWorkers() *musterv1.TrainingJob {
	return testutil.MakeJob("j", "ns").UID("j-uid").Role("worker", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
}

func TestReconcileWritesStatusOnceThenActs(t *testing.T) {
	h := newHarness(t, twoWorkers(), interceptor.Funcs{}, Options{})
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites != 1 || h.creates != 2 {
		t.Fatalf("one status write and two pods, got %d writes and %d creates", h.statusWrites, h.creates)
	}
	job := h.job()
	if !job.Status.IsTrue(musterv1.ConditionCreated) || len(job.Status.Roles) != 1 || job.Status.Roles[0].TaskCount() != 2 {
		t.Fatalf("status: %+v", job.Status)
	}
	var svc corev1.Service
	if err := h.c.Get(context.Background(), h.key, &svc); err != nil {
		t.Fatalf("the job's Service: %v", err)
	}
	// The pods are seen (their tasks go Pending): one more write. Then
	// nothing changes, and nothing is written.
	for i := 0; i < 2; i++ {
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	if h.statusWrites != 2 || h.creates != 2 {
		t.Fatalf("an unchanged plan writes nothing: %d writes, %d creates", h.statusWrites, h.creates)
	}
}

// A conflicting status write means the plan was made from a stale job: it
// is dropped, nothing is acted on, and the job is planned again.
func TestStatusConflictSkipsTheActions(t *testing.T) {
	conflict := interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
		return staleJob()
	}}
	h := newHarness(t, twoWorkers(), conflict, Options{})
	res, err := h.reconcile()
	if err != nil || res.RequeueAfter == 0 {
		t.Fatalf("a conflict replans soon, without an error: %+v, %v", res, err)
	}
	if h.creates != 0 || len(h.pods()) != 0 {
		t.Fatalf("nothing is created on a stale plan: %d creates", h.creates)
	}
}

// diesAfterStatus makes the operator die, while *crash is set, once it has
// written its decision: every write but a status write fails, as if the
// operator were gone.
func diesAfterStatus(crash *bool) interceptor.Funcs {
	died := errors.New("operator died")
	return interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			if *crash {
				return died
			}
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteOption) error {
			if *crash {
				return died
			}
			return c.Delete(ctx, obj, o...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
			if *crash {
				return died
			}
			return c.Patch(ctx, obj, p, o...)
		},
	}
}

// The operator dies after writing its decision and before acting on it:
// the next reconcile finds the decision in status and carries it out, and
// counts nothing twice.
func TestCrashBetweenWriteAndActRecovers(t *testing.T) {
	job := twoWorkers()
	crash := true
	h := newHarness(t, job, diesAfterStatus(&crash), Options{})
	_, _ = h.reconcile()
	if h.statusWrites != 1 || h.creates != 0 {
		t.Fatalf("decided and written, not acted: %d writes, %d creates", h.statusWrites, h.creates)
	}
	crash = false
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock})
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if len(h.pods()) != 2 {
		t.Fatalf("the restarted operator creates the pods: %d", len(h.pods()))
	}
	// A pod fails; the operator writes the restart, dies, and comes back.
	pod := h.pods()[0]
	pod.Status = testutil.ExitedStatus(1, "Error", time.Unix(1000, 0))
	if err := h.c.Status().Update(context.Background(), &pod); err != nil {
		t.Fatal(err)
	}
	crash = true
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock})
	_, _ = h.reconcile()
	crash = false
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock})
	for i := 0; i < 3; i++ {
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	if r := h.job().Status.Restarts; r != (musterv1.RestartCounts{Total: 1, Accountable: 1}) {
		t.Fatalf("one restart, counted once across the crash: %+v", r)
	}
	if n := len(h.pods()); n != 2 {
		t.Fatalf("the failed pod is replaced: %d pods", n)
	}
}

// A create the API server refuses is an error and a warning event, and the
// decision written before it stays.
func TestFailedCreatesAreReported(t *testing.T) {
	refuse := interceptor.Funcs{Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			return apierrors.NewServiceUnavailable("the API server is overloaded")
		}
		return nil
	}}
	h := newHarness(t, twoWorkers(), refuse, Options{})
	_, err := h.reconcile()
	if err == nil || !strings.Contains(err.Error(), "creating pod") {
		t.Fatalf("want the create error, got %v", err)
	}
	found := false
	for _, e := range h.events() {
		if strings.Contains(e, "Warning "+string(musterv1.EventReasonPodCreateFailed)) && strings.Contains(e, "2 pod creates failed") {
			found = true
		}
	}
	if !found {
		t.Fatal("a warning event says the creates failed")
	}
	if h.statusWrites != 1 {
		t.Fatalf("the status was written before acting: %d writes", h.statusWrites)
	}
}

// A pod whose create finds it already there, made by an earlier reconcile
// the cache has yet to show, is what the operator wanted: no error.
func TestCreateOfAnExistingPodIsNotAnError(t *testing.T) {
	exists := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			if err := c.Create(ctx, obj, o...); err != nil {
				return err
			}
			return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, obj.GetName())
		}
		return nil
	}}
	h := newHarness(t, twoWorkers(), exists, Options{})
	if _, err := h.reconcile(); err != nil {
		t.Fatalf("AlreadyExists is not an error: %v", err)
	}
}

// A create that finds the name held by an earlier instance the cache does
// not show (being deleted) made nothing: the reconcile is not done, and is
// retried, without warning of a failure; nothing is reported as taken.
func TestCreateOfANameAnEarlierInstanceHoldsIsNotDone(t *testing.T) {
	job := twoWorkers()
	hidden := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, o ...client.ListOption) error {
		if err := c.List(ctx, list, o...); err != nil {
			return err
		}
		if pods, ok := list.(*corev1.PodList); ok {
			pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
		}
		return nil
	}}
	h := newHarness(t, job, hidden, Options{})
	for i := range 2 {
		old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("j-worker-%d", i), Namespace: "ns", Finalizers: []string{musterv1.FinalizerTracking},
			Labels:          map[string]string{musterv1.LabelJobName: "j", musterv1.LabelJobAttempt: "0", musterv1.LabelTaskAttempt: "1"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, musterv1.GroupVersion.WithKind("TrainingJob"))},
		}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x"}}}}
		if err := h.c.Create(context.Background(), old); err != nil {
			t.Fatal(err)
		}
		if err := h.c.Delete(context.Background(), old); err != nil {
			t.Fatal(err)
		}
	}
	_, err := h.reconcile()
	if err == nil || !strings.Contains(err.Error(), "an earlier instance still holds the name") {
		t.Fatalf("want the reconcile to fail on the held names, got %v", err)
	}
	for _, e := range h.events() {
		if strings.Contains(e, string(musterv1.EventReasonPodCreateFailed)) || strings.Contains(e, string(musterv1.ReasonNameTaken)) {
			t.Fatalf("a held name is neither a failure nor taken: %s", e)
		}
	}
}

// A job with no pods to make yet (suspended) plans again as soon as its
// status write comes back, often before the cache shows the Service it
// made: it neither makes the Service again nor takes its own for someone
// else's, which would warn of a name taken when it is resumed.
func TestServiceTheCacheHasYetToShowIsNotMadeAgain(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j-uid").Role("worker", 2).Suspend(true).WithDefaults().Obj()
	var serviceCreates int
	lagging := interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, o ...client.GetOption) error {
			if _, ok := obj.(*corev1.Service); ok {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, key.Name)
			}
			return c.Get(ctx, key, obj, o...)
		},
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Service); ok {
				serviceCreates++
			}
			return nil
		},
	}
	h := newHarness(t, job, lagging, Options{})
	for range 2 {
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	if serviceCreates != 1 {
		t.Fatalf("the Service was created %d times, want once", serviceCreates)
	}
	resumed := h.job()
	resumed.Spec.Run.Execution = musterv1.ExecutionStart
	if err := h.c.Update(context.Background(), resumed); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.events() {
		if strings.Contains(e, string(musterv1.ReasonNameTaken)) {
			t.Fatalf("the job's own Service taken for someone else's: %s", e)
		}
	}
	if n := len(h.pods()); n != 2 || serviceCreates != 1 {
		t.Fatalf("resumed: %d pods, %d Service creates; want 2 and 1", n, serviceCreates)
	}
}

// apiReader answers Gets as the API server would, with a job newer than
// the cache's.
type apiReader struct {
	client.Reader
	resourceVersion string
}

func (a apiReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := a.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	obj.SetResourceVersion(a.resourceVersion)
	return nil
}

// A plan that would create pods without writing status first checks that
// the job it was made from is the newest: a cache that lags (the job was
// suspended or finished meanwhile) creates nothing.
func TestCreatesWithoutAStatusWriteNeedAFreshJob(t *testing.T) {
	crash := true
	h := newHarness(t, twoWorkers(), diesAfterStatus(&crash), Options{})
	_, _ = h.reconcile() // status written: two tasks to create; nothing created
	crash = false
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock, APIReader: apiReader{Reader: h.c, resourceVersion: "999"}})
	res, err := h.reconcile()
	if err != nil || res.RequeueAfter == 0 || h.creates != 0 {
		t.Fatalf("a stale cache creates nothing and replans: %+v, %v, %d creates", res, err, h.creates)
	}
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock, APIReader: h.c})
	if _, err := h.reconcile(); err != nil || h.creates != 2 {
		t.Fatalf("a fresh job creates its pods: %v, %d creates", err, h.creates)
	}
}

// A plan that would delete pods without writing status checks the job is
// the newest too. The job's cache can lag behind the pods': here it still
// shows the status from before a scale-up reused an index whose old pod had
// just gone, while the pods show the new instance. From that view the new
// pod is the deletion-pending task's old one; deleting it needs no status
// change, so no write would catch the stale view.
func TestDeletesWithoutAStatusWriteNeedAFreshJob(t *testing.T) {
	stale, attempts := false, 0
	// The test decides when a deleted pod is gone.
	held := testutil.MakeJob("j", "ns").UID("j-uid").Role("worker", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).
		Template(func(p *corev1.PodTemplateSpec) { p.Finalizers = []string{"test.muster.dev/hold"} }).WithDefaults().Obj()
	h := newHarness(t, held, interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
		if stale {
			attempts++
			return staleJob()
		}
		return nil
	}}, Options{})
	ctx := context.Background()
	scale := func(n int32) {
		t.Helper()
		job := h.job()
		job.Spec.Roles[0].Replicas = &n
		if err := h.c.Update(ctx, job); err != nil {
			t.Fatal(err)
		}
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	worker1 := func() *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{}
		if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.key.Namespace, Name: "j-worker-1"}, pod); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	// Down to one: worker 1 is deletion-pending, its pod held by the
	// test's finalizer. Back up to two before it is gone: the status the
	// lagging cache will show.
	scale(1)
	old := worker1()
	if old.DeletionTimestamp == nil {
		t.Fatal("the scale-down did not delete j-worker-1")
	}
	scale(2)
	before := h.job().Status
	if task, _ := before.Roles[0].Task(1); !task.DeletionPending {
		t.Fatalf("want task 1 deletion-pending while its pod goes, got %+v", task)
	}
	// The old pod goes; the next plan makes the task a new instance.
	gone := worker1()
	gone.Finalizers = nil
	if err := h.c.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	fresh := worker1()
	if fresh.UID == old.UID || fresh.DeletionTimestamp != nil {
		t.Fatalf("want a new j-worker-1, got uid %s (old %s)", fresh.UID, old.UID)
	}

	// The cache shows the job as it was before that plan's write.
	job := h.job()
	job.Status = before
	if err := h.c.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	stale = true
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock, APIReader: apiReader{Reader: h.c, resourceVersion: "999"}})
	res, err := h.reconcile()
	if err != nil || res.RequeueAfter == 0 || attempts != 0 {
		t.Fatalf("want a replan with no status write from the stale job: %+v, %v, %d writes tried", res, err, attempts)
	}
	if got := worker1(); got.UID != fresh.UID || got.DeletionTimestamp != nil {
		t.Fatalf("a plan from a stale job deleted the task's new pod: uid %s, deleting %v", got.UID, got.DeletionTimestamp)
	}
}

// A replacement pod is announced by the plan's TaskRestarting event alone:
// PodsCreated counts a task's first pod, so a replaced pod costs the API
// server one event, not two.
func TestAReplacementIsAnnouncedOnce(t *testing.T) {
	h := newHarness(t, twoWorkers(), interceptor.Funcs{}, Options{})
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := countEvents(h.events(), musterv1.EventReasonPodsCreated); got != 1 {
		t.Fatalf("the first pods: %d PodsCreated events, want 1", got)
	}
	for _, p := range h.pods() {
		h.setPhase(p.Name, corev1.PodRunning)
	}
	lost := h.pods()[0].Name
	h.setPhase(lost, corev1.PodFailed)
	var seen []string
	for range 5 {
		if _, err := h.reconcile(); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, h.events()...)
	}
	if h.creates != 3 {
		t.Fatalf("the lost pod was not replaced once: %d creates, events %q", h.creates, seen)
	}
	if got := countEvents(seen, musterv1.EventReasonTaskRestarting); got != 1 {
		t.Errorf("the replacement: %d TaskRestarting events, want 1: %q", got, seen)
	}
	if got := countEvents(seen, musterv1.EventReasonPodsCreated); got != 0 {
		t.Errorf("the replacement: %d PodsCreated events, want none: %q", got, seen)
	}
}

func countEvents(events []string, reason musterv1.EventReason) int {
	n := 0
	for _, e := range events {
		if strings.Contains(e, " "+string(reason)+" ") {
			n++
		}
	}
	return n
}
