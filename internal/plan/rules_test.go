package plan

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// untilPods steps until the world has n pods of the current attempt.
func (w *world) untilPods(n int) {
	w.t.Helper()
	for i := 0; i < 5; i++ {
		if len(w.pods) == n && w.allCurrent() {
			return
		}
		w.step()
	}
	w.t.Fatalf("want %d pods of attempt %d, have %d", n, w.job.Status.Attempt, len(w.pods))
}

func (w *world) allCurrent() bool {
	for _, p := range w.pods {
		if p.Labels[musterv1.LabelJobAttempt] != itoa(w.job.Status.Attempt) {
			return false
		}
	}
	return true
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func (w *world) runEverything() {
	for name := range w.pods {
		w.setPhase(name, corev1.PodRunning)
	}
	w.step()
}

func TestStaticPyTorchRestartsTheWholeGang(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").PyTorch().Role("master", 1).Role("worker", 2).WithDefaults().Obj())
	w.runAll()
	old := w.pods["j-master-0"].UID
	w.exit("j-worker-1", 137)
	res := w.step()
	if w.job.Status.Attempt != 1 || len(res.DeletePods) != 3 || len(res.CreatePods) != 0 {
		t.Fatalf("attempt %d, %d deletes, %d creates", w.job.Status.Attempt, len(res.DeletePods), len(res.CreatePods))
	}
	if r := w.job.Status.Restarts; r != (musterv1.RestartCounts{Total: 1, Accountable: 1}) {
		t.Fatalf("one gang restart counts once: %+v", r)
	}
	if w.job.Status.Phase != musterv1.PhaseRestarting || len(w.job.Status.Attempts) != 1 || w.job.Status.Attempts[0].ID != 0 {
		t.Fatalf("phase %s attempts %+v", w.job.Status.Phase, w.job.Status.Attempts)
	}
	w.untilPods(3)
	if w.pods["j-master-0"].UID == old || w.pods["j-master-0"].Labels[musterv1.LabelJobAttempt] != "1" {
		t.Fatal("every pod is recreated in the new attempt")
	}
	w.runEverything()
	if w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("phase = %s", w.job.Status.Phase)
	}
}

func TestJobRetryPolicy(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).RestartPolicy(musterv1.RestartPolicyNever).BackoffLimit(1).WithDefaults().Obj()
	job.Spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}
	w := newWorld(t, job)
	w.runAll()
	w.exit("j-w-0", 1)
	w.step()
	if w.job.Status.Attempt != 1 || w.job.Status.Retries.Total != 1 || w.job.Status.Phase != musterv1.PhaseRestarting {
		t.Fatalf("attempt %d retries %+v phase %s", w.job.Status.Attempt, w.job.Status.Retries, w.job.Status.Phase)
	}
	if c := w.job.Status.Attempts[0].Completion; c == nil || c.Reason != musterv1.ReasonCompletionPolicy {
		t.Fatalf("the ended attempt records why: %+v", c)
	}
	w.untilPods(1)
	w.runEverything()
	w.exit("j-w-0", 1)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed || !strings.Contains(w.job.Status.Completion.Message, "not retried") {
		t.Fatalf("phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
}

func TestTransientFailuresRetryTheJobWithoutCounting(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).RestartPolicy(musterv1.RestartPolicyNever).WithDefaults().Obj()
	job.Spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: musterv1.RetryOnTransientFailure}
	w := newWorld(t, job)
	w.runAll()
	w.pods["j-w-0"].Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}
	w.step()
	if w.job.Status.Attempt != 1 || w.job.Status.Retries != (musterv1.RestartCounts{Total: 1}) {
		t.Fatalf("a transient failure is retried even with maxRetries 0, uncounted: attempt %d retries %+v",
			w.job.Status.Attempt, w.job.Status.Retries)
	}
}

func ruleJob(rules ...musterv1.FailureRule) *musterv1.TrainingJob {
	job := testutil.MakeJob("j", "ns").UID("j").Role("ps", 2).Role("trainer", 2).RestartPolicy(musterv1.RestartPolicyNever).WithDefaults().Obj()
	job.Spec.FailurePolicy.Rules = rules
	return job
}

// on is a rule on events, for some roles (none: every role).
func on(events []musterv1.FailureEvent, action musterv1.FailureAction, roles ...string) musterv1.FailureRule {
	return musterv1.FailureRule{OnEvents: events, Action: action, Roles: roles}
}

func events(e ...musterv1.FailureEvent) []musterv1.FailureEvent { return e }

func TestTaskCompletedCompletesTheJob(t *testing.T) {
	w := newWorld(t, ruleJob(on(events(musterv1.EventTaskCompleted), musterv1.ActionCompleteJob, "trainer")))
	w.runAll()
	w.exit("j-trainer-0", 0)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("one trainer is not the role: phase %s", w.job.Status.Phase)
	}
	w.exit("j-trainer-1", 0)
	res := w.step()
	if w.job.Status.Phase != musterv1.PhaseSucceeded || w.job.Status.Completion.Reason != musterv1.ReasonPolicyCompleted {
		t.Fatalf("phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
	if len(res.DeletePods) != 2 {
		t.Fatalf("the parameter servers are stopped: %d deletes", len(res.DeletePods))
	}
}

func TestExitCodeRuleOverridesRestartPolicy(t *testing.T) {
	w := newWorld(t, ruleJob(
		musterv1.FailureRule{OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{3}}, Roles: []string{"trainer"}, Action: musterv1.ActionRestartTask},
		on(events(musterv1.EventPodFailed), musterv1.ActionRestartJob),
	))
	w.runAll()
	w.exit("j-trainer-1", 3)
	w.step()
	if ts := w.task("trainer", 1); ts.State != musterv1.TaskRestarting || w.job.Status.Attempt != 0 {
		t.Fatalf("exit 3 restarts the pod only: task %+v attempt %d", ts, w.job.Status.Attempt)
	}
	if r := w.job.Status.Restarts; r != (musterv1.RestartCounts{Total: 1, Accountable: 1}) {
		t.Fatalf("a rule's restart of a code error counts, whatever the restart policy: %+v", r)
	}
	w.step()
	w.untilPods(4)
	w.runEverything()
	w.exit("j-ps-0", 1)
	w.step()
	if w.job.Status.Attempt != 1 {
		t.Fatalf("any other failure restarts the job: attempt %d", w.job.Status.Attempt)
	}
}

func TestRestartRoleRule(t *testing.T) {
	w := newWorld(t, ruleJob(on(events(musterv1.EventPodFailed), musterv1.ActionRestartRole, "ps")))
	w.runAll()
	trainer := w.pods["j-trainer-0"].UID
	w.exit("j-ps-1", 1)
	res := w.step()
	if len(res.DeletePods) != 2 || w.job.Status.Restarts.Total != 1 {
		t.Fatalf("both ps pods go, one restart: %+v, restarts %+v", res.DeletePods, w.job.Status.Restarts)
	}
	w.untilPods(4)
	if w.pods["j-trainer-0"].UID != trainer {
		t.Fatal("the trainers are untouched")
	}
}

func TestBackoffLimitPerTask(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(10).BackoffLimitPerTask(1).WithDefaults().Obj()
	w := newWorld(t, job)
	w.runAll()
	w.exit("j-w-0", 1)
	w.step()
	w.untilPods(1)
	w.runEverything()
	w.exit("j-w-0", 1)
	w.step()
	if ts := w.task("w", 0); ts.State != musterv1.TaskFailed || ts.AccountableRestarts != 1 {
		t.Fatalf("task = %+v", ts)
	}
	if w.job.Status.Phase != musterv1.PhaseFailed {
		t.Fatalf("the task failing for good fails the job: %s", w.job.Status.Phase)
	}
}

func TestGracefulDeletionTimeoutForcesDeletion(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
	job.Spec.Roles[0].GracefulDeletionTimeoutSeconds = new(int64(60))
	w := newWorld(t, job)
	w.runAll()
	pod := w.pods["j-w-0"]
	pod.DeletionTimestamp = new(metav1.NewTime(w.now.Add(30 * time.Second)))
	pod.DeletionGracePeriodSeconds = new(int64(30))
	res := w.plan()
	if res.RequeueAfter != 60*time.Second || len(res.DeletePods) != 0 {
		t.Fatalf("wait for the timeout: requeue %v deletes %+v", res.RequeueAfter, res.DeletePods)
	}
	w.now = w.now.Add(60 * time.Second)
	res = w.plan()
	if len(res.DeletePods) != 1 || !res.DeletePods[0].Force {
		t.Fatalf("want a forced delete, got %+v", res.DeletePods)
	}
}

func TestPodPendingTimeout(t *testing.T) {
	rule := on(events(musterv1.EventPodPending), musterv1.ActionRestartTask)
	rule.TimeoutSeconds = 120
	job := ruleJob(rule)
	job.Spec.FailurePolicy.BackoffLimit = new(int32(10))
	w := newWorld(t, job)
	w.step()
	for _, p := range w.pods {
		p.CreationTimestamp = metav1.NewTime(w.now)
	}
	if res := w.plan(); res.RequeueAfter != 120*time.Second {
		t.Fatalf("requeue = %v", res.RequeueAfter)
	}
	w.now = w.now.Add(2 * time.Minute)
	res := w.step()
	if len(res.DeletePods) != 4 || w.task("ps", 0).LastExit.Reason != musterv1.ExitReasonPodPendingTimeout {
		t.Fatalf("deletes %d task %+v", len(res.DeletePods), w.task("ps", 0))
	}
}

func TestInvalidRulesFailTheJobBeforeAnythingIsCreated(t *testing.T) {
	job := ruleJob(
		on(events(musterv1.EventPodFailed), musterv1.ActionRestartRole, "ps"),
		on(events(musterv1.EventPodFailed), musterv1.ActionFailJob, "ps"),
	)
	w := newWorld(t, job)
	res := w.step()
	if len(res.CreatePods) != 0 || w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonInvalidSpec {
		t.Fatalf("creates %d phase %s completion %+v", len(res.CreatePods), w.job.Status.Phase, w.job.Status.Completion)
	}
	if !strings.Contains(w.job.Status.Completion.Message, "spec.failurePolicy.rules[1]") {
		t.Fatalf("the message names the field: %q", w.job.Status.Completion.Message)
	}
}

// A task action on a task-wide event has no pod to act on. The CRD's CEL
// refuses it, but a job can skip CEL (stored before the rule, or kept by
// ratcheting): the planner refuses it too, before anything is created,
// rather than acting on it when a task fails.
func TestATaskActionOnATaskWideEventFailsTheJobAsInvalid(t *testing.T) {
	for _, ev := range []musterv1.FailureEvent{musterv1.EventTaskFailed, musterv1.EventTaskCompleted} {
		w := newWorld(t, ruleJob(on(events(ev), musterv1.ActionRestartTask, "ps")))
		res := w.step()
		if len(res.CreatePods) != 0 || w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonInvalidSpec {
			t.Fatalf("%s: creates %d phase %s completion %+v", ev, len(res.CreatePods), w.job.Status.Phase, w.job.Status.Completion)
		}
		if !strings.Contains(w.job.Status.Completion.Message, "spec.failurePolicy.rules[0].onEvents") {
			t.Fatalf("%s: the message names the field: %q", ev, w.job.Status.Completion.Message)
		}
	}
}

func TestConflictDelaysTheNewAttempt(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").Role("w", 1).RestartPolicy(musterv1.RestartPolicyNever).WithDefaults().Obj()
	job.Spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure, ConflictDelaySeconds: musterv1.DelayBounds{Min: new(int32(30)), Max: new(int32(40))}}
	w := newWorld(t, job)
	w.runAll()
	w.exit("j-w-0", 201) // the program says: transient, resource conflict
	w.step()
	next := w.job.Status.NextAttemptTime
	if w.job.Status.Attempt != 1 || next == nil {
		t.Fatalf("attempt %d next %v", w.job.Status.Attempt, next)
	}
	if d := next.Sub(w.now); d < 30*time.Second || d > 40*time.Second {
		t.Fatalf("delay %v outside [30s, 40s]", d)
	}
	if again := w.plan(); again.Status.NextAttemptTime == nil || !again.Status.NextAttemptTime.Equal(next) {
		t.Fatal("replanning keeps the delay")
	}
	w.steps(2)
	if len(w.pods) != 0 {
		t.Fatalf("no pod before the delay is over, got %d", len(w.pods))
	}
	w.now = next.Time
	w.step()
	if len(w.pods) != 1 || w.job.Status.NextAttemptTime != nil {
		t.Fatalf("the new attempt starts after the delay: %d pods, next %v", len(w.pods), w.job.Status.NextAttemptTime)
	}
}

func TestPartlyPlacedJob(t *testing.T) {
	job := ruleJob(on(events(musterv1.EventPartlyPlaced), musterv1.ActionRestartJob))
	job.Spec.FailurePolicy.BackoffLimit = new(int32(5))
	w := newWorld(t, job)
	w.step()
	for name := range w.pods {
		w.setPhase(name, corev1.PodRunning)
	}
	w.pods["j-trainer-1"].Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	w.step()
	if w.job.Status.Attempt != 1 {
		t.Fatalf("a partly placed gang restarts the job: attempt %d", w.job.Status.Attempt)
	}
}

// A rule's suspension is the job's status alone: the job is held, with no
// pods, until its spec changes, and the spec is never written.
func TestSuspendPolicyHoldsUntilTheSpecChanges(t *testing.T) {
	job := ruleJob(on(events(musterv1.EventPodFailed), musterv1.ActionSuspendJob, "ps"))
	job.Generation = 1
	w := newWorld(t, job)
	w.runAll()
	w.exit("j-ps-0", 1)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseSuspended {
		t.Fatalf("phase %s, want Suspended", w.job.Status.Phase)
	}
	if w.job.Spec.Run.Execution != "" {
		t.Fatalf("the spec was written: spec.run.execution %s", w.job.Spec.Run.Execution)
	}
	// Held: the pods go and none comes back, over any number of plans.
	for range 3 {
		if res := w.step(); len(res.CreatePods) != 0 {
			t.Fatalf("a job a rule suspended creates %d pods", len(res.CreatePods))
		}
	}
	if len(w.pods) != 0 || w.job.Status.Phase != musterv1.PhaseSuspended {
		t.Fatalf("%d pods left, phase %s", len(w.pods), w.job.Status.Phase)
	}
	// Any change of the spec (muster resume makes one) resumes it, and the
	// rule's decision is not made again.
	w.job.Generation = 2
	if res := w.step(); len(res.CreatePods) == 0 || w.job.Status.Phase == musterv1.PhaseSuspended {
		t.Fatalf("resumed: creates %d, phase %s", len(res.CreatePods), w.job.Status.Phase)
	}
}

func TestFailTaskLeavesTheJobToItsCompletionPolicy(t *testing.T) {
	job := ruleJob(musterv1.FailureRule{OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{3}},
		Roles: []string{"trainer"}, Action: musterv1.ActionFailTask})
	job.Spec.Roles[1].Completion = &musterv1.CompletionPolicy{MinFailed: new(int32(2))}
	job.Spec.Roles[1].RestartPolicy = musterv1.RestartPolicyOnFailure
	w := newWorld(t, job)
	w.runAll()
	w.exit("j-trainer-0", 3)
	w.step()
	if ts := w.task("trainer", 0); ts.State != musterv1.TaskFailed || w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("exit 3 fails the task, not the job: task %+v phase %s", ts, w.job.Status.Phase)
	}
	w.exit("j-trainer-1", 3)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonCompletionPolicy {
		t.Fatalf("the second failed trainer meets minFailed 2: phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
}

func TestClassRuleRestartsTransientFailuresOfAStaticPyTorchRolePerTask(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j").PyTorch().Role("master", 1).Role("worker", 2).WithDefaults().
		Rule(musterv1.FailureRule{OnClasses: []musterv1.FailureClass{musterv1.ClassTransient}, Roles: []string{"worker"}, Action: musterv1.ActionRestartTask}).Obj()
	w := newWorld(t, job)
	w.runAll()
	w.pods["j-worker-1"].Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}
	w.step()
	if w.job.Status.Attempt != 0 || w.task("worker", 1).State != musterv1.TaskRestarting {
		t.Fatalf("an evicted worker is replaced alone: attempt %d task %+v", w.job.Status.Attempt, w.task("worker", 1))
	}
	if r := w.job.Status.Restarts; r != (musterv1.RestartCounts{Total: 1}) {
		t.Fatalf("an eviction is free: %+v", r)
	}
}

// A job that ends while a task waits for its replacement leaves nothing
// pending in its status: no task Restarting, no Restarting condition.
func TestFinishedJobStatusIsConsistent(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(1).WithDefaults().Obj())
	w.runAll()
	w.exit("j-w-0", 1)
	w.step()
	if w.task("w", 0).State != musterv1.TaskRestarting {
		t.Fatalf("w-0 restarts: %+v", w.task("w", 0))
	}
	w.exit("j-w-1", 1)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed {
		t.Fatalf("the budget is spent: %s", w.job.Status.Phase)
	}
	for _, ts := range w.expanded().Roles[0].Tasks {
		if ts.State == musterv1.TaskRestarting || ts.State == musterv1.TaskCreating {
			t.Errorf("task %d is still %s in a finished job", ts.Index, ts.State)
		}
	}
	if w.job.Status.IsTrue(musterv1.ConditionRestarting) {
		t.Error("a finished job is not Restarting")
	}
}
