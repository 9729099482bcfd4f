package plan

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/trainingprogress"
)

func progressJob(stallSeconds int32, rules ...musterv1.FailureRule) *musterv1.TrainingJob {
	job := ruleJob(rules...)
	job.Spec.Progress = &musterv1.Progress{Port: musterv1.DefaultProgressPort, IntervalSeconds: 30, StallSeconds: stallSeconds}
	job.Spec.FailurePolicy.BackoffLimit = new(int32(5))
	return job
}

// report gives the next plan a report of step, as read from trainer 0.
func (w *world) report(step int64) {
	w.t.Helper()
	r, err := trainingprogress.Parse([]byte(`{"step": ` + strconv.FormatInt(step, 10) + `, "totalSteps": 1000, "metrics": {"loss": 0.5}}`))
	if err != nil {
		w.t.Fatal(err)
	}
	w.progress = &ProgressRead{Report: &r, Reporter: "j-trainer-0"}
}

func hasEnv(env []corev1.EnvVar, name, value string) bool {
	for _, e := range env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

func TestProgressIsReadIntoStatusAndEveryPodToldThePort(t *testing.T) {
	w := newWorld(t, progressJob(0))
	res := w.step()
	if len(res.CreatePods) == 0 {
		t.Fatal("no pods made")
	}
	for _, pod := range res.CreatePods {
		if env := pod.Spec.Containers[0].Env; !hasEnv(env, musterv1.EnvProgressPort, "28555") {
			t.Fatalf("pod %s is not told where to serve its progress: %v", pod.Name, env)
		}
	}
	w.runAll()
	w.report(100)
	w.step()
	p := w.job.Status.Progress
	if p == nil || *p.Step != 100 || *p.Percent != 10 || p.Reporter != "j-trainer-0" || len(p.Metrics) != 1 {
		t.Fatalf("progress %+v", p)
	}
	if w.job.Status.Condition(musterv1.ConditionStalled) != nil {
		t.Error("a job without stallSeconds has a Stalled condition")
	}
	// A plan without a read keeps the progress.
	w.now = w.now.Add(10 * time.Second)
	w.step()
	if w.job.Status.Progress == nil || *w.job.Status.Progress.Step != 100 {
		t.Fatalf("a plan with nothing read lost the progress: %+v", w.job.Status.Progress)
	}
	// An answer that is no report is an event, and changes nothing.
	w.progress = &ProgressRead{Unreadable: "pod j-trainer-0 serves no progress report"}
	res = w.step()
	if len(res.Events) != 1 || res.Events[0].Reason != musterv1.EventReasonProgressUnreadable || *w.job.Status.Progress.Step != 100 {
		t.Fatalf("unreadable: events %+v, progress %+v", res.Events, w.job.Status.Progress)
	}
	// spec.progress removed: status.progress goes, and new pods are not
	// told a port.
	w.job.Spec.Progress = nil
	w.step()
	if w.job.Status.Progress != nil {
		t.Errorf("spec.progress removed, status.progress stays: %+v", w.job.Status.Progress)
	}
}

func TestNoProgressWithoutSpecProgress(t *testing.T) {
	w := newWorld(t, ruleJob())
	res := w.step()
	for _, pod := range res.CreatePods {
		for _, e := range pod.Spec.Containers[0].Env {
			if e.Name == musterv1.EnvProgressPort {
				t.Fatalf("pod %s is told a progress port though the job asks for none", pod.Name)
			}
		}
	}
}

// A job whose progress stands still for stallSeconds is Stalled, once,
// with an event; its rule restarts it, and the new attempt has the whole
// time again.
func TestStalledJobIsRestartedByItsRule(t *testing.T) {
	w := newWorld(t, progressJob(600, on(events(musterv1.EventStalled), musterv1.ActionRestartJob)))
	w.runAll()
	w.report(100)
	res := w.step()
	cond := w.job.Status.Condition(musterv1.ConditionStalled)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != string(musterv1.ReasonProgressing) {
		t.Fatalf("Stalled %+v, want False Progressing", cond)
	}
	if res.RequeueAfter == 0 || res.RequeueAfter > 600*time.Second {
		t.Errorf("requeue %s: the plan must come back by the stall's time", res.RequeueAfter)
	}
	// The same step for 599 s: not yet.
	w.now = w.now.Add(599 * time.Second)
	w.report(100)
	w.step()
	if w.job.Status.IsTrue(musterv1.ConditionStalled) || w.job.Status.Attempt != 0 {
		t.Fatalf("stalled before its time: attempt %d", w.job.Status.Attempt)
	}
	// 600 s: stalled, and the rule restarts the job, counted.
	w.now = w.now.Add(time.Second)
	res = w.step()
	var stalledEvents int
	for _, e := range res.Events {
		if e.Reason == musterv1.EventReasonStalled {
			stalledEvents++
		}
	}
	if w.job.Status.Attempt != 1 || stalledEvents != 1 || w.job.Status.Restarts.Accountable != 1 {
		t.Fatalf("attempt %d, Stalled events %d, accountable restarts %d", w.job.Status.Attempt, stalledEvents, w.job.Status.Restarts.Accountable)
	}
	// The new attempt counts from its own start: no second restart
	// although the progress has not moved since.
	for range 4 {
		w.now = w.now.Add(10 * time.Second)
		w.step()
		for name := range w.pods {
			w.setPhase(name, corev1.PodRunning)
		}
	}
	if w.job.Status.Attempt != 1 || w.job.Status.IsTrue(musterv1.ConditionStalled) || w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("restarted again at once: attempt %d, phase %s", w.job.Status.Attempt, w.job.Status.Phase)
	}
}

// Without a rule a stalled job is only marked: the condition and one
// event, and it keeps running; progress that moves again clears it.
func TestStalledWithoutARuleIsACondition(t *testing.T) {
	w := newWorld(t, progressJob(60))
	w.runAll()
	w.report(1)
	w.step()
	w.now = w.now.Add(2 * time.Minute)
	res := w.step()
	if !w.job.Status.IsTrue(musterv1.ConditionStalled) || len(res.Events) != 1 || w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("stalled %v, events %+v, phase %s", w.job.Status.IsTrue(musterv1.ConditionStalled), res.Events, w.job.Status.Phase)
	}
	if res = w.step(); len(res.Events) != 0 {
		t.Errorf("the stall was told again: %+v", res.Events)
	}
	w.report(2)
	w.step()
	if w.job.Status.IsTrue(musterv1.ConditionStalled) {
		t.Error("progress moved, the job is still Stalled")
	}
}

// A program's last report, left as its container's termination message
// when it succeeded, reaches status though no read could take it: the job
// ends at 100%. Only the reporter's end counts once there is a reporter.
func TestFinalReportFromTheTerminationMessage(t *testing.T) {
	w := newWorld(t, progressJob(0))
	w.runAll()
	w.report(900)
	w.step()
	final := func(name, msg string) {
		w.exit(name, 0)
		w.pods[name].Status.ContainerStatuses[0].State.Terminated.Message = msg
	}
	// Another pod's end, with a report of its own: not the reporter's.
	final("j-trainer-1", `{"step": 10, "totalSteps": 1000}`)
	w.step()
	if *w.job.Status.Progress.Step != 900 {
		t.Fatalf("a pod that was not the reporter moved the progress back: step %d", *w.job.Status.Progress.Step)
	}
	// The reporter's end: its last report.
	final("j-trainer-0", `{"step": 1000, "totalSteps": 1000, "metrics": {"loss": 0.1}}`)
	w.step()
	if p := w.job.Status.Progress; *p.Step != 1000 || *p.Percent != 100 {
		t.Fatalf("the final report was not taken: %+v", p)
	}
	// A message that is no report is left alone.
	w2 := newWorld(t, progressJob(0))
	w2.runAll()
	w2.exit("j-trainer-0", 0)
	w2.pods["j-trainer-0"].Status.ContainerStatuses[0].State.Terminated.Message = "{not json"
	w2.step()
	if w2.job.Status.Progress != nil {
		t.Fatalf("a message that is no report made progress: %+v", w2.job.Status.Progress)
	}
}

// firstSucceededEnds is a progress job that succeeds once a trainer has,
// as an elastic world's does.
func firstSucceededEnds() *musterv1.TrainingJob {
	job := progressJob(0)
	for i := range job.Spec.Roles {
		if job.Spec.Roles[i].Name == "trainer" {
			job.Spec.Roles[i].Completion = &musterv1.CompletionPolicy{MinSucceeded: new(int32(1))}
		}
	}
	return job
}

// A job whose end came from another task than rank 0's stops rank 0's
// pod while it leaves its last report: the pod is held until it has ended,
// and its report, though the stop made it exit 143, ends the job at 100%.
// Released at once, as before, the pod would be gone with its report.
func TestTheLastReportOfAPodTheJobsEndStoppedIsTaken(t *testing.T) {
	w := newWorld(t, firstSucceededEnds())
	w.slow["j-trainer-0"] = true
	w.runAll()
	w.report(290)
	w.step()
	w.exit("j-trainer-1", 0)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseSucceeded {
		t.Fatalf("phase %s", w.job.Status.Phase)
	}
	rank0 := w.pods["j-trainer-0"]
	if rank0 == nil || rank0.DeletionTimestamp == nil {
		t.Fatalf("the job's end did not stop rank 0's pod: %+v", rank0)
	}
	// Stopping: held, and the plan comes back before the wait is over.
	w.now = w.now.Add(time.Second)
	res := w.step()
	if !observe.Tracked(rank0) {
		t.Fatal("a stopping pod of a finished job with progress was released before it ended")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > finalReportWait {
		t.Errorf("requeue after %v, want within %v", res.RequeueAfter, finalReportWait)
	}
	// It ends, stopped, with its last report: taken, then released.
	w.exit("j-trainer-0", 143)
	rank0.Status.ContainerStatuses[0].State.Terminated.Message = `{"step": 1000, "totalSteps": 1000}`
	w.step()
	if p := w.job.Status.Progress; p == nil || *p.Percent != 100 || p.Reporter != "j-trainer-0" {
		t.Fatalf("the stopped pod's last report was not taken: %+v", p)
	}
	if observe.Tracked(rank0) {
		t.Error("the pod was held after it ended")
	}

	// A stopped pod that never ends is released once its grace period
	// and the wait have passed.
	w2 := newWorld(t, firstSucceededEnds())
	w2.slow["j-trainer-0"] = true
	w2.runAll()
	w2.exit("j-trainer-1", 0)
	w2.step()
	w2.now = w2.now.Add(finalReportWait + time.Second)
	w2.step()
	if p := w2.pods["j-trainer-0"]; p != nil && observe.Tracked(p) {
		t.Error("a stopped pod that never ended was held past the wait")
	}
}
