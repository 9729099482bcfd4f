package plan

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/testutil"
)

// world is a tiny stand-in for the API server in the pure planner's tests:
// it holds a job and its pods, and applies a plan's results the way the
// executor would.
type world struct {
	t    *testing.T
	job  *musterv1.TrainingJob
	pods map[string]*corev1.Pod
	now  time.Time
	uids int
	// slow are pods whose deletion takes a while: deleting them only sets
	// their deletion timestamp, and finish() removes them.
	slow map[string]bool
	// full plans with status written in full, task by task.
	full bool
	// secrets are the SSH Secrets made for the job, by the name the API
	// server gave them, oldest first.
	secrets []string
	// inPlace is what the operator offers for restarting in place.
	inPlace InPlaceSupport
	// gang is the job's gang backend, None for none: its gang object
	// exists, admits the pods and places them as soon as a plan asks for
	// it, as a scheduler with room for the gang would.
	gang musterv1.GangBackend
	// progress is the training progress the next plan is given as read,
	// once.
	progress *ProgressRead
}

func newWorld(t *testing.T, job *musterv1.TrainingJob) *world {
	return &world{t: t, job: job, pods: map[string]*corev1.Pod{}, now: time.Unix(1000, 0), slow: map[string]bool{}}
}

func (w *world) plan() Result { return w.planOn(w.pods) }

// planOn plans on pods as a cache shows them: the world's own, or what
// they were a while ago.
func (w *world) planOn(view map[string]*corev1.Pod) Result {
	summarizeStatus = !w.full
	defer func() { summarizeStatus = true }()
	pods := podList(view)
	res := Plan(Input{Job: w.job.DeepCopy(), Pods: pods, HasService: true, Now: w.now, SSHSecret: w.unrecordedSecret(), InPlace: w.inPlace,
		Gang: w.gangObject(), Progress: w.progress})
	w.progress = nil
	// The operator gives Plan its cache's own pods, not copies: a plan
	// must leave them as they were.
	for _, p := range pods {
		// reflect, not the semantic equality: a quantity whose cached
		// string a plan filled in changed too, and the cache is shared.
		if !reflect.DeepEqual(p, view[p.Name]) {
			w.t.Fatalf("the plan changed the pod %s it was given", p.Name)
		}
	}
	return res
}

// gangObject is the job's gang as the controller would observe it: the
// gang object placing its current attempt exists and admits its pods.
func (w *world) gangObject() *Gang {
	if w.gang == "" || w.gang == musterv1.GangNone {
		return nil
	}
	return &Gang{Backend: w.gang, Attempt: gang.Placing(w.job.Name, &w.job.Status), MinAvailable: gang.MinSize(w.job),
		Exists: true, State: gang.State{Admitted: true, Scheduled: new(true)}}
}

// unrecordedSecret is the newest SSH Secret made, while the job's status
// names none, as the controller keeps it.
func (w *world) unrecordedSecret() string {
	if len(w.secrets) == 0 || w.job.Status.MPI.SSHSecretName != "" {
		return ""
	}
	return w.secrets[len(w.secrets)-1]
}

// podList is a copy of the world's pods, as a cache would list them.
func (w *world) podList() []*corev1.Pod { return podList(w.pods) }

func podList(pods map[string]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.DeepCopy())
	}
	return out
}

// step plans, writes status and acts, like one reconcile.
func (w *world) step() Result {
	res := w.plan()
	w.release(res.ReleaseAtOnce)
	w.job.Status = res.Status
	w.release(res.ReleasePods)
	if s := res.CreateSSHSecret; s != nil {
		w.secrets = append(w.secrets, s.GenerateName+"x"+strconv.Itoa(len(w.secrets)))
	}
	for _, d := range res.DeletePods {
		if p := w.pods[d.Name]; p != nil && p.UID == d.UID {
			if w.slow[d.Name] && !d.Force {
				p.DeletionTimestamp = new(metav1.NewTime(w.now))
				continue
			}
			delete(w.pods, d.Name)
		}
	}
	for _, r := range res.RestartPods {
		if p := w.pods[r.Name]; p != nil && p.UID == r.UID {
			p.Labels[musterv1.LabelJobAttempt] = strconv.Itoa(int(r.Attempt))
			p.Labels[musterv1.LabelTaskAttempt] = strconv.Itoa(int(r.TaskAttempt))
			p.Annotations[musterv1.AnnotationInPlaceRestarts] = strconv.Itoa(int(r.Restarts))
		}
	}
	for _, p := range res.CreatePods {
		if w.pods[p.Name] != nil {
			continue
		}
		w.uids++
		p.UID = types.UID("uid-" + strconv.Itoa(w.uids))
		p.Status.Phase = corev1.PodPending
		p.CreationTimestamp = metav1.NewTime(w.now)
		w.pods[p.Name] = p
	}
	return res
}

// release removes the tracking finalizer, as the API server does: a pod
// deleted without grace that nothing else holds is then gone; one being
// deleted gracefully stays until its node confirms.
func (w *world) release(refs []PodRef) {
	for _, r := range refs {
		p := w.pods[r.Name]
		if p == nil || p.UID != r.UID {
			continue
		}
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == musterv1.FinalizerTracking })
		if p.DeletionTimestamp != nil && len(p.Finalizers) == 0 && ptr.Deref(p.DeletionGracePeriodSeconds, -1) == 0 {
			delete(w.pods, r.Name)
		}
	}
}

func (w *world) setPhase(name string, phase corev1.PodPhase) {
	w.pods[name].Status = corev1.PodStatus{Phase: phase}
}

func (w *world) exit(name string, code int32) {
	w.pods[name].Status = testutil.ExitedStatus(code, "Error", w.now)
}

// expanded is the job's status with one task per index, as the planner
// reads it.
func (w *world) expanded() musterv1.TrainingJobStatus {
	s := *w.job.Status.DeepCopy()
	expandTasks(w.job, &s)
	for i := range s.Roles {
		for j := range s.Roles[i].Tasks {
			t := &s.Roles[i].Tasks[j]
			live := t.State == musterv1.TaskPending || t.State == musterv1.TaskRunning || t.State == musterv1.TaskRestarting
			if pod := w.pods[t.Pod]; pod != nil && t.PodUID == "" && live && (t.LastExit == nil || t.LastExit.PodUID != pod.UID) {
				t.PodUID = pod.UID
				t.Attempts = max(t.Attempts, observe.TaskAttempt(pod))
			}
		}
	}
	return s
}

func (w *world) task(role string, index int32) musterv1.TaskStatus {
	for _, rs := range w.expanded().Roles {
		if rs.Name == role {
			return rs.Tasks[index]
		}
	}
	w.t.Fatalf("no role %s", role)
	return musterv1.TaskStatus{}
}

func (w *world) runAll() {
	w.step()
	for name := range w.pods {
		w.setPhase(name, corev1.PodRunning)
	}
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning {
		w.t.Fatalf("phase = %s, want Running", w.job.Status.Phase)
	}
}

func TestRestartSequence(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	w.runAll()
	failed := w.pods["j-w-1"].UID
	w.exit("j-w-1", 1)

	// 1. The decision is recorded, the failed pod deleted and its
	// replacement asked for: a finished pod has nothing to stop, so it goes
	// without grace, once released, and its name is free for the
	// replacement the moment the delete returns.
	res := w.plan()
	if got := res.Status.Restarts; got != (musterv1.RestartCounts{Total: 1, Accountable: 1}) {
		t.Fatalf("restarts = %+v", got)
	}
	if len(res.DeletePods) != 1 || res.DeletePods[0].UID != failed || !res.DeletePods[0].Force {
		t.Fatalf("want one delete of %s without grace, got %+v", failed, res.DeletePods)
	}
	if len(res.ReleasePods) != 1 || res.ReleasePods[0].UID != failed {
		t.Fatalf("want the failed pod released before its deletion, got %+v", res.ReleasePods)
	}
	if len(res.CreatePods) != 1 || res.CreatePods[0].Name != "j-w-1" || res.CreatePods[0].Labels[musterv1.LabelTaskAttempt] != "2" {
		t.Fatalf("want the replacement j-w-1 as task attempt 2 in the same plan, got %d creates", len(res.CreatePods))
	}

	// 2. The operator crashes after writing status but before acting:
	// replanning from the written status neither loses nor doubles it.
	w.job.Status = res.Status
	again := w.plan()
	if again.Status.Restarts != res.Status.Restarts || len(again.DeletePods) != 1 || again.DeletePods[0].UID != failed || len(again.CreatePods) != 1 {
		t.Fatalf("replay: restarts %+v deletes %+v creates %d", again.Status.Restarts, again.DeletePods, len(again.CreatePods))
	}

	// 3. Act: the failed pod is deleted, then the replacement made.
	w.step()
	if w.pods["j-w-1"] == nil || w.pods["j-w-1"].UID == failed || w.pods["j-w-1"].Labels[musterv1.LabelTaskAttempt] != "2" {
		t.Fatalf("want a replacement pod with task attempt 2, got %+v", w.pods["j-w-1"])
	}
	if w.job.Status.Phase != musterv1.PhaseRestarting {
		t.Fatalf("phase = %s, want Restarting", w.job.Status.Phase)
	}
	// 4. Adopted while pending: still restarting.
	w.step()
	if ts := w.task("w", 1); ts.State != musterv1.TaskRestarting || ts.Attempts != 2 || ts.PodUID != w.pods["j-w-1"].UID {
		t.Fatalf("task = %+v", ts)
	}
	// 5. Running again.
	w.setPhase("j-w-1", corev1.PodRunning)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning || w.job.Status.Restarts.Total != 1 {
		t.Fatalf("phase %s restarts %+v", w.job.Status.Phase, w.job.Status.Restarts)
	}
	if ts := w.task("w", 1); ts.Restarts != 1 || ts.LastExit.PodUID != failed {
		t.Fatalf("task = %+v", ts)
	}
}

func TestBackoffLimitCountsEveryRestart(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyAlways).BackoffLimit(2).WithDefaults().Obj())
	w.runAll()
	// Two restarts through two paths (a success under Always, a failure).
	for i, name := range []string{"j-w-0", "j-w-1"} {
		w.exit(name, int32(i))
		w.step()
		w.step()
		w.setPhase(name, corev1.PodRunning)
		w.step()
	}
	if w.job.Status.Restarts.Accountable != 2 || w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("restarts %+v phase %s", w.job.Status.Restarts, w.job.Status.Phase)
	}
	w.exit("j-w-0", 1)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonBackoffLimitExceeded {
		t.Fatalf("phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
	// cleanPodPolicy Running stops the running pod and keeps the failed one.
	if len(w.pods) != 1 || w.pods["j-w-0"] == nil {
		t.Fatalf("want only the failed pod kept, got %d pods", len(w.pods))
	}
	if w.task("w", 1).State != musterv1.TaskStopped {
		t.Fatalf("task 1 = %+v, want Stopped", w.task("w", 1))
	}
}

func TestVanishedPodIsReplacedWithoutCounting(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 1).BackoffLimit(0).WithDefaults().Obj())
	w.runAll()
	delete(w.pods, "j-w-0")
	res := w.step()
	if len(res.CreatePods) != 1 {
		t.Fatalf("want the replacement created at once, got %d creates", len(res.CreatePods))
	}
	if r := w.job.Status.Restarts; r.Total != 1 || r.Accountable != 0 {
		t.Fatalf("restarts = %+v", r)
	}
}

func TestSuspendAndResume(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).WithDefaults().Obj())
	w.runAll()
	w.job.Spec.Run.Execution = musterv1.ExecutionSuspend
	res := w.step()
	if len(res.DeletePods) != 2 || w.job.Status.Phase != musterv1.PhaseSuspended || w.job.Status.StartTime != nil {
		t.Fatalf("deletes %d phase %s start %v", len(res.DeletePods), w.job.Status.Phase, w.job.Status.StartTime)
	}
	for _, d := range res.DeletePods {
		if d.Force {
			t.Fatalf("a running pod is deleted without grace: %+v", d)
		}
	}
	w.step()
	if len(w.pods) != 0 || w.task("w", 0).State != musterv1.TaskStopped {
		t.Fatalf("pods %d task %+v", len(w.pods), w.task("w", 0))
	}
	w.job.Spec.Run.Execution = musterv1.ExecutionStart
	res = w.step()
	if len(res.CreatePods) != 2 || res.CreatePods[0].Labels[musterv1.LabelTaskAttempt] != "2" {
		t.Fatalf("want 2 creates as attempt 2, got %d", len(res.CreatePods))
	}
	if w.job.Status.Restarts.Total != 0 || w.job.Status.StartTime == nil {
		t.Fatalf("restarts %+v start %v", w.job.Status.Restarts, w.job.Status.StartTime)
	}
}

func TestFinishedJobNeverRecreatesAndExpires(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 1).TTL(10*time.Second).WithDefaults().Obj())
	w.runAll()
	w.exit("j-w-0", 0)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseSucceeded {
		t.Fatalf("phase = %s", w.job.Status.Phase)
	}
	delete(w.pods, "j-w-0")
	w.now = w.now.Add(5 * time.Second)
	res := w.step()
	if len(res.CreatePods) != 0 || res.DeleteJob || res.RequeueAfter != 5*time.Second {
		t.Fatalf("creates %d deleteJob %v requeue %v", len(res.CreatePods), res.DeleteJob, res.RequeueAfter)
	}
	w.now = w.now.Add(5 * time.Second)
	if res = w.step(); !res.DeleteJob {
		t.Fatal("want the job deleted once its TTL passed")
	}
}

func TestActiveDeadline(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 1).ActiveDeadline(30*time.Second).WithDefaults().Obj())
	w.runAll()
	if res := w.plan(); res.RequeueAfter != 30*time.Second {
		t.Fatalf("requeue = %v, want the time left", res.RequeueAfter)
	}
	w.now = w.now.Add(30 * time.Second)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonDeadlineExceeded {
		t.Fatalf("phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
}

func TestStrayPodsAreDeleted(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).WithDefaults().Obj()
	w := newWorld(t, job)
	w.pods["j-w-1"] = testutil.MakePod(job, "w", 1).Obj() // beyond replicas
	w.pods["j-x-0"] = testutil.MakePod(job, "x", 0).Obj() // unknown role
	old := testutil.MakePod(job, "w", 0).Obj()            // older job attempt
	old.Labels[musterv1.LabelJobAttempt] = "7"
	w.pods["j-w-0"] = old
	res := w.plan()
	if len(res.DeletePods) != 3 {
		t.Fatalf("want 3 strays deleted, got %+v", res.DeletePods)
	}
	if len(res.CreatePods) != 0 {
		t.Fatal("no create while the old instance of j-w-0 still exists")
	}
}

// Every action a failure decision or a rule can name has its entry in the
// one action table: the table is the whole meaning of an action.
func TestEveryActionIsInTheTable(t *testing.T) {
	all := []musterv1.FailureAction{
		failure.ActionSucceedTask, musterv1.ActionRestartTask, musterv1.ActionRestartRole, musterv1.ActionRestartJob,
		musterv1.ActionFailTask, musterv1.ActionFailJob, musterv1.ActionFailJob, musterv1.ActionCompleteJob,
		musterv1.ActionSuspendJob,
	}
	for _, a := range all {
		if actions[a] == nil {
			t.Errorf("action %s is not in the action table", a)
		}
	}
}
