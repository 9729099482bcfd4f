package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/internal/testutil/kubelet"
)

// kubeletRuns makes pod run what it was last asked: every restart asked is
// done, now.
func (w *world) kubeletRuns(name string) { kubelet.RestartedAsAsked(w.pods[name], w.now) }

// trainingFails makes pod's training container fail with code and, as its
// restart rule says, restart alone.
func (w *world) trainingFails(name string, code int32) {
	// A while into the run: the second the run began is taken for the run
	// before's (observe.InPlaceFailure).
	w.now = w.now.Add(5 * time.Second)
	kubelet.RestartedAlone(w.pods[name], code, w.now)
}

// inPlaceWorld runs job, made to restart in place, until every pod runs;
// configure sets up the world before the first plan.
func inPlaceWorld(t *testing.T, job *musterv1.TrainingJob, configure ...func(*world)) *world {
	w := newWorld(t, job)
	w.inPlace = InPlaceSupport{WatcherImage: "muster:test", Default: musterv1.RestartModeInPlace}
	for _, c := range configure {
		c(w)
	}
	w.step()
	for name := range w.pods {
		w.kubeletRuns(name)
	}
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("phase = %s, want Running", w.job.Status.Phase)
	}
	return w
}

func uids(w *world) map[string]types.UID {
	out := map[string]types.UID{}
	for name, p := range w.pods {
		out[name] = p.UID
	}
	return out
}

// A gang restart in place: the failed pod and the others keep their UIDs,
// move to the next attempt by a patch, and run it once their node has
// restarted them; one restart is charged, whatever the plans in between
// see.
func TestAGangRestartsInPlace(t *testing.T) {
	w := inPlaceWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeJob).BackoffLimit(3).WithDefaults().Obj())
	if got := w.pods["j-w-0"].Spec.InitContainers[0].Name; got != objects.RestartWatcherName {
		t.Fatalf("the pods must be made to restart in place; first init container %q", got)
	}
	before := uids(w)
	stale := podsCopy(w.pods)
	w.trainingFails("j-w-1", 3)

	res := w.plan()
	if len(res.DeletePods) != 0 || len(res.CreatePods) != 0 {
		t.Fatalf("an in-place restart deletes and creates nothing, got %d deletes %d creates", len(res.DeletePods), len(res.CreatePods))
	}
	if len(res.RestartPods) != 3 {
		t.Fatalf("want all 3 pods restarted in place, got %+v", res.RestartPods)
	}
	for _, r := range res.RestartPods {
		if r.Attempt != 1 || r.TaskAttempt != 2 || r.Restarts != 1 {
			t.Errorf("%s: want attempt 1, task attempt 2, restarts 1, got %+v", r.Name, r)
		}
	}
	if got := res.Status.Restarts; got != (musterv1.RestartCounts{Total: 1, Accountable: 1}) {
		t.Fatalf("restarts = %+v, want one charged", got)
	}
	rec := res.Status.Attempts[len(res.Status.Attempts)-1]
	if rec.PodRestarts == nil || rec.PodRestarts.InPlace != 3 || rec.PodRestarts.Recreated != 0 {
		t.Errorf("the attempt's record must say 3 pods restarted in place, got %+v", rec)
	}
	w.job.Status = res.Status

	// A plan whose cache does not show the patches yet asks the same
	// again, and deletes nothing.
	again := w.planOn(stale)
	if len(again.DeletePods) != 0 || len(again.RestartPods) != 3 || again.Status.Restarts.Total != 1 {
		t.Fatalf("a stale cache: deletes %+v, restarts %+v, total %d", again.DeletePods, again.RestartPods, again.Status.Restarts.Total)
	}
	for i, r := range again.RestartPods {
		if r != res.RestartPods[i] {
			t.Errorf("asked again differently: %+v, was %+v", r, res.RestartPods[i])
		}
	}

	w.step()
	if w.pods["j-w-0"].Labels[musterv1.LabelJobAttempt] != "1" {
		t.Fatalf("the patch moves the pod to attempt 1, labels %v", w.pods["j-w-0"].Labels)
	}
	// Patched, not restarted yet: restarting, and the old run's failure
	// is not taken again.
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRestarting || w.job.Status.Restarts.Total != 1 {
		t.Fatalf("phase %s, restarts %+v", w.job.Status.Phase, w.job.Status.Restarts)
	}
	for name := range w.pods {
		w.kubeletRuns(name)
	}
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning || w.job.Status.Restarts.Total != 1 || w.job.Status.Attempt != 1 {
		t.Fatalf("phase %s, restarts %+v, attempt %d", w.job.Status.Phase, w.job.Status.Restarts, w.job.Status.Attempt)
	}
	for name, uid := range uids(w) {
		if before[name] != uid {
			t.Errorf("%s was re-created", name)
		}
	}
	if ts := w.task("w", 1); ts.Attempts != 2 || ts.State != musterv1.TaskRunning {
		t.Errorf("task 1 = %+v, want instance 2 running", ts)
	}
}

// A pod that cannot restart in place is re-created alone, and the
// attempt's record and event say which and why.
func TestAPodThatCannotRestartInPlaceIsRecreatedAlone(t *testing.T) {
	w := inPlaceWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeJob).BackoffLimit(3).WithDefaults().Obj())
	failed := w.pods["j-w-2"].UID
	w.exit("j-w-2", 1) // failed for good: phase Failed
	res := w.plan()
	if len(res.DeletePods) != 1 || res.DeletePods[0].UID != failed || len(res.RestartPods) != 2 {
		t.Fatalf("want j-w-2 deleted and the 2 others restarted in place, got deletes %+v restarts %+v", res.DeletePods, res.RestartPods)
	}
	rec := res.Status.Attempts[len(res.Status.Attempts)-1].PodRestarts
	if rec == nil || rec.InPlace != 2 || rec.Recreated != 1 || !strings.Contains(rec.Message, "j-w-2 (it has ended (failed))") {
		t.Errorf("record = %+v", rec)
	}
	found := false
	for _, e := range res.Events {
		found = found || (e.Reason == musterv1.EventReasonJobRestarting && strings.Contains(e.Message, "1 re-created: j-w-2"))
	}
	if !found {
		t.Errorf("the restart's event must name the re-created pod: %+v", res.Events)
	}
}

// A job with a gang backend keeps the gang that placed its pods while
// they all restart in place: they never leave their nodes. When one cannot
// (it ended, its node is lost, it was preempted), the whole gang is
// re-created and placed afresh by a new gang, never half in the old one,
// as a job that re-creates its pods always is.
func TestAGangBackendKeepsItsGangThroughAnInPlaceRestart(t *testing.T) {
	job := func(mode musterv1.RestartMode) *musterv1.TrainingJob {
		j := testutil.MakeJob("j", "ns").UID("j").Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).
			RestartScope(musterv1.RestartScopeJob).BackoffLimit(3).WithDefaults().Obj()
		j.Spec.FailurePolicy.RestartMode = mode
		return j
	}
	volcano := func(w *world) { w.gang = musterv1.GangVolcano }
	placedBy := func(w *world, want string) {
		t.Helper()
		st := w.job.Status
		if st.Scheduling == nil || st.Scheduling.PodGroup != want || !st.IsTrue(musterv1.ConditionGangScheduled) {
			t.Fatalf("attempt %d: want the gang %s placed, got %+v, conditions %+v", st.Attempt, want, st.Scheduling, st.Conditions)
		}
	}

	w := inPlaceWorld(t, job(musterv1.RestartModeInPlace), volcano)
	placedBy(w, "j-0")
	w.trainingFails("j-w-1", 3)
	if res := w.step(); len(res.RestartPods) != 3 || len(res.DeletePods) != 0 {
		t.Fatalf("want every pod restarted in place, got restarts %+v deletes %+v", res.RestartPods, res.DeletePods)
	}
	placedBy(w, "j-0")
	for name := range w.pods {
		w.kubeletRuns(name)
	}
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning || w.job.Status.Attempt != 1 {
		t.Fatalf("phase %s, attempt %d", w.job.Status.Phase, w.job.Status.Attempt)
	}
	placedBy(w, "j-0")

	// j-w-2 ends (its restart watcher's record and every restart count
	// stay, as the kubelet keeps them): an ended pod cannot restart in
	// place.
	before := w.pods["j-w-2"].Status
	w.exit("j-w-2", 1)
	ended := &w.pods["j-w-2"].Status
	ended.InitContainerStatuses = before.InitContainerStatuses
	for i := range ended.ContainerStatuses {
		ended.ContainerStatuses[i].RestartCount = before.ContainerStatuses[i].RestartCount
	}
	res := w.step()
	for i := 0; len(res.DeletePods) == 0 && len(res.RestartPods) == 0 && i < 5; i++ {
		w.now = w.now.Add(time.Minute) // the back-off between attempts
		res = w.step()
	}

	if len(res.RestartPods) != 0 || len(res.DeletePods) != 3 {
		t.Fatalf("one pod cannot restart in place: want the whole gang re-created, got restarts %+v deletes %+v", res.RestartPods, res.DeletePods)
	}
	rec := res.Status.Attempts[len(res.Status.Attempts)-1].PodRestarts
	if rec == nil || rec.InPlace != 0 || rec.Recreated != 3 || !strings.Contains(rec.Message, "its gang is placed afresh: j-w-2 cannot restart in place") {
		t.Errorf("record = %+v", rec)
	}
	for range 3 {
		w.step()
	}
	if len(w.pods) != 3 || w.job.Status.Attempt != 2 {
		t.Fatalf("attempt %d with %d pods, want 3 new pods of attempt 2", w.job.Status.Attempt, len(w.pods))
	}
	placedBy(w, "j-2")

	w = newWorld(t, job(musterv1.RestartModeRecreate))
	volcano(w)
	w.runAll()
	placedBy(w, "j-0")
	w.exit("j-w-1", 1)
	for range 3 {
		w.step()
	}
	if w.job.Status.Attempt != 1 {
		t.Fatalf("attempt %d, want 1", w.job.Status.Attempt)
	}
	placedBy(w, "j-1")
}

// A task that restarts alone restarts in place into its next instance,
// charged once; the pod keeps its UID.
func TestATaskRestartsInPlace(t *testing.T) {
	w := inPlaceWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).RestartScope(musterv1.RestartScopeTask).
		RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(3).WithDefaults().Obj())
	uid := w.pods["j-w-1"].UID
	w.trainingFails("j-w-1", 3)
	res := w.step()
	if len(res.RestartPods) != 1 || res.RestartPods[0].Name != "j-w-1" || res.RestartPods[0].TaskAttempt != 2 || res.RestartPods[0].Attempt != 0 {
		t.Fatalf("want j-w-1 restarted in place as instance 2, got %+v", res.RestartPods)
	}
	if ts := w.task("w", 1); ts.State != musterv1.TaskRestarting || ts.LastExit == nil || ts.LastExit.Code != 3 {
		t.Fatalf("task = %+v, want restarting with exit 3 recorded", ts)
	}
	w.step()
	w.kubeletRuns("j-w-1")
	w.step()
	ts := w.task("w", 1)
	if ts.State != musterv1.TaskRunning || ts.Attempts != 2 || w.pods["j-w-1"].UID != uid || w.job.Status.Restarts.Total != 1 {
		t.Fatalf("task = %+v, restarts %+v", ts, w.job.Status.Restarts)
	}
	// The exit that started it is not taken again.
	w.step()
	if w.job.Status.Restarts.Total != 1 {
		t.Fatalf("restarts = %+v", w.job.Status.Restarts)
	}
}

// A job that ends while a pod that restarts in place runs its failed task
// again (the container is restarted alone until the operator decides)
// stops that pod, even where the job keeps its pods.
func TestAFailedTasksPodThatRestartsInPlaceIsStopped(t *testing.T) {
	w := inPlaceWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).
		BackoffLimit(0).CleanPodPolicy(musterv1.CleanPodPolicyNone).WithDefaults().Obj())
	failed, other := w.pods["j-w-0"].UID, w.pods["j-w-1"].UID
	w.trainingFails("j-w-0", 3)
	res := w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed {
		t.Fatalf("phase = %s, want Failed", w.job.Status.Phase)
	}
	if len(res.DeletePods) != 1 || res.DeletePods[0].UID != failed {
		t.Fatalf("want only the failed task's pod stopped (the other is kept, as the policy says), got %+v", res.DeletePods)
	}
	_ = other
}

// A job that restarts by re-creating gets no watcher, and one whose
// template names its attempt cannot restart in place.
func TestWhichJobsRestartInPlace(t *testing.T) {
	recreate := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).WithDefaults().Obj()
	recreate.Spec.FailurePolicy.RestartMode = musterv1.RestartModeRecreate
	placeholder := testutil.MakeJob("p", "ns").UID("p").Role("w", 1).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Args = []string{"--run={{MUSTER_ATTEMPT_ID}}"}
	}).WithDefaults().Obj()
	for _, job := range []*musterv1.TrainingJob{recreate, placeholder} {
		w := newWorld(t, job)
		w.inPlace = InPlaceSupport{WatcherImage: "muster:test", Default: musterv1.RestartModeInPlace}
		res := w.step()
		if len(res.CreatePods) != 1 || len(res.CreatePods[0].Spec.InitContainers) != 0 {
			t.Errorf("%s: want a pod without a watcher", job.Name)
		}
	}
	w := newWorld(t, testutil.MakeJob("d", "ns").UID("d").Role("w", 1).WithDefaults().Obj())
	w.inPlace = InPlaceSupport{Default: musterv1.RestartModeInPlace}
	if res := w.step(); len(res.CreatePods[0].Spec.InitContainers) != 0 {
		t.Error("without the watcher's image nothing restarts in place")
	}
}

func podsCopy(pods map[string]*corev1.Pod) map[string]*corev1.Pod {
	out := make(map[string]*corev1.Pod, len(pods))
	for k, p := range pods {
		out[k] = p.DeepCopy()
	}
	return out
}

// succeededInPlace makes pod show it ran what it was last asked and its
// every training container then exited 0: the pod has Succeeded, its
// watcher stopped with it, as a node reports it.
func (w *world) succeededInPlace(name string) {
	pod := w.pods[name]
	kubelet.RestartedAsAsked(pod, w.now)
	w.now = w.now.Add(5 * time.Second)
	kubelet.Succeeded(pod, w.now)
}

// A gang restarted in place whose pods are first seen again once they have
// run the new attempt to its end: the job ends Succeeded, with the one
// restart it made, whichever plans saw nothing in between.
func TestAGangRestartedInPlaceFirstSeenSucceededEnds(t *testing.T) {
	w := inPlaceWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("m", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeJob).
		Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeJob).BackoffLimit(3).WithDefaults().Obj())
	w.trainingFails("j-w-1", 1)
	w.trainingFails("j-m-0", 1)
	if res := w.step(); len(res.RestartPods) != 4 {
		t.Fatalf("want every pod restarted in place, got %+v", res.RestartPods)
	}
	for name := range w.pods {
		w.succeededInPlace(name)
	}
	for range 3 {
		w.step()
	}
	st := w.job.Status
	if st.Phase != musterv1.PhaseSucceeded || st.Restarts.Total != 1 || st.Attempt != 1 {
		t.Fatalf("phase %s, restarts %+v, attempt %d, roles %+v", st.Phase, st.Restarts, st.Attempt, st.Roles)
	}
}

// The node restarts a failed training container alone, at once and after
// each back-off, whether the operator looks or not, and the pod keeps only
// the last exit: every such restart is charged, once, however few of them
// a plan saw.
func TestEveryRestartTheNodeMadeAloneIsChargedOnce(t *testing.T) {
	job := func(backoffLimit int32) *musterv1.TrainingJob {
		return testutil.MakeJob("j", "ns").UID("j").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).
			RestartScope(musterv1.RestartScopeTask).BackoffLimit(backoffLimit).WithDefaults().Obj()
	}
	t.Run("three failures between two looks use up a budget of one", func(t *testing.T) {
		w := inPlaceWorld(t, job(1))
		for range 3 {
			w.trainingFails("j-w-1", 1)
		}
		for range 3 {
			w.step()
		}
		if st := w.job.Status; st.Phase != musterv1.PhaseFailed || st.Restarts.Accountable < 2 {
			t.Fatalf("phase %s, restarts %+v: three failures with backoffLimit 1 must fail the job", st.Phase, st.Restarts)
		}
	})
	t.Run("two failures then a success are two restarts", func(t *testing.T) {
		w := inPlaceWorld(t, job(5))
		w.trainingFails("j-w-1", 1)
		w.trainingFails("j-w-1", 1)
		for name := range w.pods {
			w.now = w.now.Add(time.Second)
			kubelet.Succeeded(w.pods[name], w.now)
		}
		for range 3 {
			w.step()
		}
		if st := w.job.Status; st.Phase != musterv1.PhaseSucceeded || st.Restarts != (musterv1.RestartCounts{Total: 2, Accountable: 2}) {
			t.Fatalf("phase %s, restarts %+v: want Succeeded with the two restarts counted", st.Phase, st.Restarts)
		}
	})
	t.Run("each failure seen at once is charged once", func(t *testing.T) {
		w := inPlaceWorld(t, job(5))
		for i := range 3 {
			w.trainingFails("j-w-1", 1)
			w.step()
			w.step()
			w.kubeletRuns("j-w-1")
			w.step()
			w.step()
			if got := w.job.Status.Restarts.Total; got != int32(i+1) {
				t.Fatalf("after failure %d: restarts %+v", i+1, w.job.Status.Restarts)
			}
		}
		// Two more, the second before the operator looks again.
		w.trainingFails("j-w-1", 1)
		w.trainingFails("j-w-1", 1)
		w.step()
		w.kubeletRuns("j-w-1")
		w.step()
		if got := w.job.Status.Restarts.Total; got != 5 {
			t.Fatalf("restarts %+v, want 5", w.job.Status.Restarts)
		}
	})
}

// One plan that restarts a task in place and then, for another task's
// failure, the whole job asks each pod once, into the attempt it starts:
// none is left in the attempt the plan ended, none both deleted and asked.
func TestALaterDecisionOfOnePlanReplacesAnEarlierAsk(t *testing.T) {
	w := inPlaceWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).
		RestartScope(musterv1.RestartScopeTask).BackoffLimit(5).
		Rule(musterv1.FailureRule{OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{7}}, Action: musterv1.ActionRestartJob}).
		WithDefaults().Obj())
	w.trainingFails("j-w-0", 1) // the task alone
	w.trainingFails("j-w-1", 7) // the whole job
	res := w.plan()
	if res.Status.Attempt != 1 {
		t.Fatalf("attempt %d, want the job restarted", res.Status.Attempt)
	}
	if len(res.RestartPods) != 3 {
		t.Fatalf("want each pod asked once, got %+v", res.RestartPods)
	}
	for _, r := range res.RestartPods {
		if r.Attempt != 1 {
			t.Errorf("%s asked into attempt %d, want 1", r.Name, r.Attempt)
		}
	}
	for _, d := range res.DeletePods {
		for _, r := range res.RestartPods {
			if d.UID == r.UID {
				t.Errorf("%s both deleted and restarted in place", d.Name)
			}
		}
	}
}

// A plan made from a job its cache shows a write behind (two attempts
// decided in a row) sees pods of a newer attempt than the job's: it asks
// none of them back into the attempt before.
func TestAPlanFromAStaleJobAsksNoPodBackIntoAnEarlierAttempt(t *testing.T) {
	w := inPlaceWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).
		RestartScope(musterv1.RestartScopeJob).BackoffLimit(5).WithDefaults().Obj())
	w.trainingFails("j-w-1", 1)
	w.step()
	for name := range w.pods {
		w.kubeletRuns(name)
	}
	w.step()
	stale := w.job.DeepCopy()
	w.trainingFails("j-w-2", 1)
	w.step()
	if w.job.Status.Attempt != 2 || w.pods["j-w-0"].Labels[musterv1.LabelJobAttempt] != "2" {
		t.Fatalf("attempt %d, labels %v: want the pods asked into attempt 2", w.job.Status.Attempt, w.pods["j-w-0"].Labels)
	}
	now := w.job
	w.job = stale
	res := w.plan()
	w.job = now
	for _, r := range res.RestartPods {
		if r.Attempt < 2 {
			t.Errorf("%s asked back into attempt %d", r.Name, r.Attempt)
		}
	}
}

// Where Muster's admission policy is missing, a pod's in-place state can
// be edited away: its annotation removed or garbled, or raised past what
// the operator asked. Such a pod is re-created with a warning, uncharged,
// rather than read for ever as not made to restart in place, or as
// restarting.
func TestAPodWhoseInPlaceStateWasEditedIsRecreated(t *testing.T) {
	job := func() *musterv1.TrainingJob {
		return testutil.MakeJob("j", "ns").UID("j").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).
			RestartScope(musterv1.RestartScopeTask).BackoffLimit(5).WithDefaults().Obj()
	}
	recreated := func(t *testing.T, w *world, want string) {
		t.Helper()
		uid := w.pods["j-w-1"].UID
		var res Result
		for range 3 {
			res = w.step()
			if len(res.DeletePods) > 0 {
				break
			}
		}
		if len(res.DeletePods) != 1 || res.DeletePods[0].UID != uid {
			t.Fatalf("want j-w-1 deleted, got %+v", res.DeletePods)
		}
		found := false
		for _, e := range res.Events {
			found = found || (e.Warning && strings.Contains(e.Message, want))
		}
		if !found {
			t.Errorf("want a warning saying %q, got %+v", want, res.Events)
		}
		if w.job.Status.Restarts.Total != 0 {
			t.Errorf("restarts %+v: the job did not fail", w.job.Status.Restarts)
		}
	}
	for name, edit := range map[string]func(*corev1.Pod){
		"removed": func(p *corev1.Pod) { delete(p.Annotations, musterv1.AnnotationInPlaceRestarts) },
		"garbled": func(p *corev1.Pod) { p.Annotations[musterv1.AnnotationInPlaceRestarts] = "x" },
	} {
		t.Run(name, func(t *testing.T) {
			w := inPlaceWorld(t, job())
			edit(w.pods["j-w-1"])
			recreated(t, w, "annotation was changed")
		})
	}
	t.Run("raised", func(t *testing.T) {
		w := inPlaceWorld(t, job())
		w.pods["j-w-1"].Annotations[musterv1.AnnotationInPlaceRestarts] = "4"
		res := w.step()
		if len(res.DeletePods) != 0 {
			t.Fatalf("a restart just asked is waited for, got deletes %+v", res.DeletePods)
		}
		// The plan comes back by the deadline, whatever else happens.
		if res.RequeueAfter <= 0 || res.RequeueAfter > inPlaceRestartDeadline {
			t.Fatalf("requeue after %v: nothing brings the plan back when the restart is overdue", res.RequeueAfter)
		}
		w.now = w.now.Add(inPlaceRestartDeadline + time.Second)
		recreated(t, w, "has not begun within")
	})
}
