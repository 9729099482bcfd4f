package plan

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/testutil"
)

func statusBytes(t *testing.T, s musterv1.TrainingJobStatus) int {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// A 10,000-task job's status stays small whatever its tasks do: running,
// failing all at once, restarting, finishing.
func TestStatusStaysSmallAtAnySize(t *testing.T) {
	const n = 10000
	job := testutil.MakeJob("big", "ns").UID("0b0c3f3e-5d3c-4b7e-9c1e-2f9a8e1c0d11").Role("worker", n).
		RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(100000).WithDefaults().Obj()
	w := newWorld(t, job)
	w.runAll()
	if got := statusBytes(t, w.job.Status); got > 4<<10 {
		t.Errorf("10,000 running tasks: status is %d bytes", got)
	}
	if w.job.Status.Ready != "10000/10000" {
		t.Fatalf("ready %s", w.job.Status.Ready)
	}

	// Every pod fails at once: a plan records at most maxEndsPerPlan of
	// them and comes back for the rest at once.
	for name := range w.pods {
		w.exit(name, 1)
	}
	res := w.step()
	if w.job.Status.Restarts.Total != maxEndsPerPlan || res.RequeueAfter != time.Millisecond {
		t.Fatalf("one plan records %d ends and requeues: %d restarts, requeue %v", maxEndsPerPlan, w.job.Status.Restarts.Total, res.RequeueAfter)
	}
	largest := 0
	for i := 0; i < 60 && w.job.Status.Restarts.Total < n; i++ {
		w.step()
		largest = max(largest, statusBytes(t, w.job.Status))
	}
	if w.job.Status.Restarts.Total != n {
		t.Fatalf("every failure is counted once: %d", w.job.Status.Restarts.Total)
	}
	if largest > 512<<10 {
		t.Errorf("while 10,000 tasks restart, status reached %d bytes", largest)
	}
	w.steps(3)
	w.runEverything()
	if got := statusBytes(t, w.job.Status); got > 8<<10 || w.job.Status.Ready != "10000/10000" {
		t.Errorf("running again after a restart each: %d bytes, ready %s", got, w.job.Status.Ready)
	}
	for i := int32(0); i < n; i += 997 {
		if ts := w.task("worker", i); ts.Restarts != 1 || ts.AccountableRestarts != 1 || ts.State != musterv1.TaskRunning {
			t.Fatalf("task %d: %+v", i, ts)
		}
	}
}

// Pods that failed and were then deleted by someone else (the pod garbage
// collector deletes without grace) are held by the tracking finalizer
// until their end is in status. A plan records at most maxEndsPerPlan
// ends, so it releases only those: a pod released before its end is
// recorded is gone, and the next plan could only take it for vanished.
func TestEndsBeyondOnePlanAreReleasedOnlyOnceRecorded(t *testing.T) {
	const n = maxEndsPerPlan + 100
	job := testutil.MakeJob("gc", "ns").UID("gc").Role("worker", n).
		RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(100000).WithDefaults().Obj()
	w := newWorld(t, job)
	w.runAll()
	for name, p := range w.pods {
		w.exit(name, 1)
		p.DeletionTimestamp = new(metav1.NewTime(w.now.Add(time.Minute)))
		p.DeletionGracePeriodSeconds = new(int64(0))
	}
	res := w.step()
	if len(res.ReleasePods) != maxEndsPerPlan {
		t.Fatalf("the first plan records %d ends and releases %d pods", maxEndsPerPlan, len(res.ReleasePods))
	}
	for i := 0; i < 5 && w.job.Status.Restarts.Total < n; i++ {
		w.step()
	}
	if st := w.job.Status.Restarts; st.Total != n || st.Accountable != n {
		t.Fatalf("every failure is charged once: %+v", st)
	}
	if ts := w.task("worker", n-1); ts.Restarts != 1 {
		t.Fatalf("the last task: %+v", ts)
	}
}

// A 10,000-task job loses a third of its nodes: the taint manager deletes
// their pods, which stay there, Terminating, as long as the nodes are
// gone. Each of those tasks is restarted and waits for its old pod to go;
// status names no old pod by UID nor keeps its exit (but the most recent
// few), so it stays small while they wait, the worst placement of the
// lost pods (every third task) included.
func TestALostThirdOfTheNodesKeepsStatusSmall(t *testing.T) {
	const n = 10000
	job := testutil.MakeJob("big", "ns").UID("0b0c3f3e-5d3c-4b7e-9c1e-2f9a8e1c0d11").Role("worker", n).
		RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(100000).WithDefaults().Obj()
	w := newWorld(t, job)
	w.runAll()
	lost := 0
	for name, p := range w.pods {
		if observe.TaskIndex(p)%3 != 0 {
			continue
		}
		lost++
		w.slow[name] = true
		p.DeletionTimestamp = new(metav1.NewTime(w.now))
		p.DeletionGracePeriodSeconds = new(int64(30))
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
			Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
			Message: "Taint manager: deleting due to NoExecute taint key node.kubernetes.io/unreachable, the node has not answered for 5m0s"})
	}
	largest := 0
	for i := 0; i < 20 && w.job.Status.Restarts.Total < int32(lost); i++ {
		w.step()
		largest = max(largest, statusBytes(t, w.job.Status))
	}
	for range 3 {
		w.step()
		largest = max(largest, statusBytes(t, w.job.Status))
	}
	if got := w.job.Status.Restarts.Total; got != int32(lost) {
		t.Fatalf("%d pods lost, %d restarts counted", lost, got)
	}
	if ts := w.task("worker", 3); ts.State != musterv1.TaskRestarting || w.pods["big-worker-3"].Labels[musterv1.LabelTaskAttempt] != "1" {
		t.Fatalf("a lost task waits for its old pod to go: %+v", ts)
	}
	t.Logf("%d of %d pods lost with their nodes: status at most %d bytes while they wait", lost, n, largest)
	if largest > 512<<10 {
		t.Errorf("status reached %d bytes", largest)
	}
}

// The worst a status can be: the most tasks a job may have, no two alike
// (every restart count different, the states mixed), the longest exits
// status keeps, a full attempt history. It stays well under etcd's
// 1.5 MiB object limit, leaving room for the spec.
func TestStatusStaysUnderEtcdsLimit(t *testing.T) {
	job := testutil.MakeJob("worst", "ns").UID("0b0c3f3e-5d3c-4b7e-9c1e-2f9a8e1c0d11").Role("worker", musterv1.MaxTasks).
		WithDefaults().Obj()
	exit := musterv1.ExitStatus{Code: 137, Reason: strings.Repeat("r", 128), Message: strings.Repeat("m", 1024),
		PodUID: "0b0c3f3e-5d3c-4b7e-9c1e-2f9a8e1c0d11", FinishedAt: new(metav1.NewTime(time.Unix(1000, 0)))}
	states := []musterv1.TaskState{musterv1.TaskRestarting, musterv1.TaskRunning, musterv1.TaskFailed}
	st := musterv1.TrainingJobStatus{Roles: []musterv1.RoleStatus{{Name: "worker", Replicas: musterv1.MaxTasks}}}
	for i := range int32(musterv1.MaxTasks) {
		st.Roles[0].Tasks = append(st.Roles[0].Tasks, musterv1.TaskStatus{Index: i, State: states[i%3],
			Pod: objects.PodName(job.Name, "worker", i), PodUID: "0b0c3f3e-5d3c-4b7e-9c1e-2f9a8e1c0d11",
			Attempts: 1000000 + i, Restarts: 1000000 + i, AccountableRestarts: 1000000 + i, DeletionPending: i%2 == 0,
			LastExit: &exit})
	}
	for i := range int32(maxAttemptHistory) {
		st.Attempts = append(st.Attempts, musterv1.AttemptStatus{ID: i, StartTime: exit.FinishedAt, CompletionTime: exit.FinishedAt,
			Completion: &musterv1.CompletionStatus{Reason: musterv1.ReasonJobRestarting, Message: strings.Repeat("m", 1024)}})
	}
	summarizeTasks(&st)
	got := statusBytes(t, st)
	t.Logf("the worst status: %d bytes", got)
	if got > 1280<<10 {
		t.Errorf("the worst status is %d bytes", got)
	}
}

// The short form keeps the last exits people read: the most recent of
// each role, and those of tasks being restarted while their pods remain.
func TestStatusKeepsTheRecentExits(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 20).RestartPolicy(musterv1.RestartPolicyNever).
		Completion(-1, 30).WithDefaults().Obj()
	w := newWorld(t, job)
	w.runAll()
	for i := 0; i < 20; i++ {
		w.now = w.now.Add(time.Second)
		w.pods["j-w-"+strconv.Itoa(i)].Status = testutil.ExitedStatus(int32(i+1), "Error", w.now)
		w.step()
	}
	var kept []int32
	for _, e := range w.job.Status.Roles[0].Tasks {
		if e.LastExit != nil {
			kept = append(kept, e.Index)
		}
	}
	if len(kept) != recentExits || kept[0] != 12 {
		t.Fatalf("the last %d exits are kept, newest included: %v", recentExits, kept)
	}
	if ts := w.task("w", 3); ts.State != musterv1.TaskFailed {
		t.Fatalf("an older failure is still a failure: %+v", ts)
	}
	if w.job.Status.Roles[0].Failed != 20 {
		t.Fatalf("counts: %+v", w.job.Status.Roles[0])
	}
}
