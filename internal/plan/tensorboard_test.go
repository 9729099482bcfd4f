package plan

import (
	"errors"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// tensorBoardPlan plans job as the controller would with the TensorBoard
// objects seen and the refused creates given.
func tensorBoardPlan(job *musterv1.TrainingJob, now time.Time, seen TensorBoard, failures ...CreateFailure) Result {
	return Plan(Input{Job: job.DeepCopy(), HasService: true, Now: now, TensorBoard: seen, CreateFailures: failures})
}

func tensorBoardCondition(t *testing.T, res Result) *metav1.Condition {
	t.Helper()
	return apimeta.FindStatusCondition(res.Status.Conditions, string(musterv1.ConditionTensorBoardReady))
}

// expectTensorBoard checks the TensorBoardReady condition's status and
// reason and the plan's action.
func expectTensorBoard(t *testing.T, res Result, status metav1.ConditionStatus, reason string, action TensorBoardAction) {
	t.Helper()
	cond := tensorBoardCondition(t, res)
	if cond == nil || cond.Status != status || cond.Reason != reason {
		t.Fatalf("TensorBoardReady = %+v, want %s/%s", cond, status, reason)
	}
	if res.TensorBoard != action {
		t.Fatalf("action %q, want %q", res.TensorBoard, action)
	}
}

// A TensorBoard is made with the job, reports its address, becomes ready,
// outlives the job's end by its TTL and is then removed for good.
func TestTensorBoardLifecycle(t *testing.T) {
	now := time.Unix(1000, 0)
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 1).TensorBoard("runs", time.Minute).WithDefaults().Obj()

	res := tensorBoardPlan(job, now, TensorBoard{})
	expectTensorBoard(t, res, metav1.ConditionFalse, string(musterv1.ReasonStarting), TensorBoardEnsure)
	if a := res.Status.TensorBoard; a.Address != "http://j-tensorboard.ns.svc:6006" {
		t.Fatalf("status.tensorboard = %+v", a)
	}
	if len(res.CreatePods) != 1 {
		t.Fatalf("the job's pods are made beside it: %d creates", len(res.CreatePods))
	}
	job.Status = res.Status

	made := TensorBoard{Deployment: true, Service: true, Current: true}
	expectTensorBoard(t, tensorBoardPlan(job, now, made), metav1.ConditionFalse, string(musterv1.ReasonStarting), "")
	ready := made
	ready.Ready = true
	res = tensorBoardPlan(job, now, ready)
	expectTensorBoard(t, res, metav1.ConditionTrue, string(musterv1.ReasonReady), "")

	// A changed spec.tensorboard brings the Deployment up to date.
	stale := ready
	stale.Current = false
	expectTensorBoard(t, tensorBoardPlan(job, now, stale), metav1.ConditionTrue, string(musterv1.ReasonReady), TensorBoardEnsure)

	// The job ends: the TensorBoard stays until its TTL has passed.
	done := now.Add(time.Hour)
	job.Status = res.Status
	job.Status.CompletionTime = &metav1.Time{Time: done}
	job.Status.Completion = &musterv1.CompletionStatus{Reason: musterv1.ReasonAllTasksCompleted}
	apimeta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{Type: string(musterv1.ConditionSucceeded),
		Status: metav1.ConditionTrue, Reason: string(musterv1.ReasonAllTasksCompleted)})
	res = tensorBoardPlan(job, done.Add(20*time.Second), ready)
	expectTensorBoard(t, res, metav1.ConditionTrue, string(musterv1.ReasonReady), "")
	if res.RequeueAfter <= 0 || res.RequeueAfter > 40*time.Second {
		t.Fatalf("requeue after %v, want at the TTL, 40s on", res.RequeueAfter)
	}
	res = tensorBoardPlan(job, done.Add(61*time.Second), ready)
	expectTensorBoard(t, res, metav1.ConditionFalse, string(musterv1.ReasonTTLExpired), TensorBoardRemove)
	if res.Status.TensorBoard.Address != "" {
		t.Fatalf("a removed TensorBoard has no address: %+v", res.Status.TensorBoard)
	}
	job.Status = res.Status
	// Gone, it is never made again.
	expectTensorBoard(t, tensorBoardPlan(job, done.Add(time.Hour), TensorBoard{}), metav1.ConditionFalse, string(musterv1.ReasonTTLExpired), "")
}

// Without a TTL the TensorBoard lives as long as the job; removing
// spec.tensorboard removes it and its condition.
func TestTensorBoardRemovedWithItsSpec(t *testing.T) {
	now := time.Unix(1000, 0)
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 1).TensorBoard("", -1).WithDefaults().Obj()
	job.Status.CompletionTime = &metav1.Time{Time: now.Add(-24 * time.Hour)}
	job.Status.Completion = &musterv1.CompletionStatus{Reason: musterv1.ReasonBackoffLimitExceeded}
	apimeta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{Type: string(musterv1.ConditionFailed),
		Status: metav1.ConditionTrue, Reason: string(musterv1.ReasonBackoffLimitExceeded)})
	ready := TensorBoard{Deployment: true, Service: true, Current: true, Ready: true}
	res := tensorBoardPlan(job, now, ready)
	expectTensorBoard(t, res, metav1.ConditionTrue, string(musterv1.ReasonReady), "")
	if res.RequeueAfter != 0 {
		t.Fatalf("nothing to wait for without a TTL, requeue %v", res.RequeueAfter)
	}

	job.Status = res.Status
	job.Spec.TensorBoard = musterv1.TensorBoard{}
	res = tensorBoardPlan(job, now, ready)
	if res.TensorBoard != TensorBoardRemove || tensorBoardCondition(t, res) != nil || res.Status.TensorBoard.Address != "" {
		t.Fatalf("action %q, condition %+v, status %+v", res.TensorBoard, tensorBoardCondition(t, res), res.Status.TensorBoard)
	}
	if res = tensorBoardPlan(job, now, TensorBoard{}); res.TensorBoard != "" {
		t.Fatalf("nothing left to remove: %q", res.TensorBoard)
	}
}

// A TensorBoard whose name another object holds is Blocked with an event
// and retried; the job itself runs on, and the condition does not flap
// while the retries fail.
func TestTensorBoardNameTakenBlocksOnlyTheTensorBoard(t *testing.T) {
	now := time.Unix(1000, 0)
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).TensorBoard("", -1).WithDefaults().Obj()
	job.Status = tensorBoardPlan(job, now, TensorBoard{}).Status

	taken := CreateFailure{Object: "Deployment j-tensorboard", NameTaken: true, TensorBoard: true, Err: errors.New("already exists")}
	res := tensorBoardPlan(job, now, TensorBoard{}, taken)
	expectTensorBoard(t, res, metav1.ConditionFalse, string(musterv1.ReasonNameTaken), TensorBoardEnsure)
	if len(res.Events) == 0 || res.Events[0].Reason != musterv1.EventReasonNameTaken || !res.Events[0].Warning {
		t.Fatalf("events %+v, want a NameTaken warning", res.Events)
	}
	if res.RequeueAfter != createRetry {
		t.Fatalf("requeue %v, want a retry after %v", res.RequeueAfter, createRetry)
	}
	if len(res.CreatePods) != 2 || res.Status.IsTrue(musterv1.ConditionFailed) {
		t.Fatalf("the job must run on: %d creates, conditions %+v", len(res.CreatePods), res.Status.Conditions)
	}
	if c := apimeta.FindStatusCondition(res.Status.Conditions, string(musterv1.ConditionRunning)); c != nil && c.Reason == string(musterv1.ReasonNameTaken) {
		t.Fatalf("the job's Running condition blames the TensorBoard: %+v", c)
	}
	job.Status = res.Status

	// The retry's plan, before its create is refused again: still Blocked.
	res = tensorBoardPlan(job, now.Add(createRetry), TensorBoard{})
	expectTensorBoard(t, res, metav1.ConditionFalse, string(musterv1.ReasonNameTaken), TensorBoardEnsure)
	job.Status = res.Status

	// The other object went: the TensorBoard is made.
	res = tensorBoardPlan(job, now.Add(2*createRetry), TensorBoard{Deployment: true, Service: true, Current: true})
	expectTensorBoard(t, res, metav1.ConditionFalse, string(musterv1.ReasonStarting), "")
}

// Any other refusal (a quota, an invalid resources field) is Blocked too,
// with the API server's answer.
func TestTensorBoardCreateRefused(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 1).TensorBoard("", -1).WithDefaults().Obj()
	refused := CreateFailure{Object: "Deployment j-tensorboard", TensorBoard: true, Err: errors.New(`exceeded quota: compute`)}
	res := tensorBoardPlan(job, time.Unix(1000, 0), TensorBoard{}, refused)
	expectTensorBoard(t, res, metav1.ConditionFalse, string(musterv1.ReasonTensorBoardFailed), TensorBoardEnsure)
	if msg := tensorBoardCondition(t, res).Message; msg != "creating Deployment j-tensorboard: exceeded quota: compute" {
		t.Fatalf("message %q", msg)
	}
}

// A job that slipped past admission with a log volume it does not have
// trains on; the condition says what is wrong and nothing is made.
func TestTensorBoardOnAMissingVolume(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 1).TensorBoard("", -1).WithDefaults().Obj()
	job.Spec.TensorBoard.Logs.Volume = "nothing"
	res := tensorBoardPlan(job, time.Unix(1000, 0), TensorBoard{})
	expectTensorBoard(t, res, metav1.ConditionFalse, string(musterv1.ReasonInvalidSpec), "")
	if len(res.CreatePods) != 1 || res.Status.IsTrue(musterv1.ConditionFailed) {
		t.Fatalf("the job must run on: %d creates", len(res.CreatePods))
	}
}
