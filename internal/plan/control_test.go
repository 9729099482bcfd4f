package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestDependsOnHoldsRoleBack(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").
		Role("master", 1).Role("worker", 2).DependsOn("master", musterv1.DependencyRunning).WithDefaults().Obj())
	res := w.step()
	if len(res.CreatePods) != 1 || res.CreatePods[0].Name != "j-master-0" {
		t.Fatalf("only the master starts first, got %d creates", len(res.CreatePods))
	}
	c := w.job.Status.Condition(musterv1.ConditionRunning)
	if c == nil || c.Reason != string(musterv1.ReasonWaitingForRoles) || c.Message != "role worker waits for role master to be Running" {
		t.Fatalf("Running condition = %+v", c)
	}
	w.step()
	if len(w.pods) != 1 {
		t.Fatalf("workers wait while the master is pending: %d pods", len(w.pods))
	}
	w.setPhase("j-master-0", corev1.PodRunning)
	if res = w.step(); len(res.CreatePods) != 2 {
		t.Fatalf("workers start once the master runs, got %d creates", len(res.CreatePods))
	}
}

func TestExecutionCreateHoldsAndStopEnds(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).Execution(musterv1.ExecutionCreate).WithDefaults().Obj())
	res := w.step()
	if len(res.CreatePods) != 0 || res.CreateService != nil {
		t.Fatal("a held job creates nothing")
	}
	if w.job.Status.IsTrue(musterv1.ConditionCreated) {
		t.Fatal("Created must be False while held")
	}
	w.job.Spec.Run.Execution = musterv1.ExecutionStart
	w.runAll()
	w.job.Spec.Run.Execution = musterv1.ExecutionStop
	res = w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonStopped {
		t.Fatalf("phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
	if len(res.DeletePods) != 2 || len(w.pods) != 0 {
		t.Fatalf("a stopped job's running pods are deleted: %d deletes, %d left", len(res.DeletePods), len(w.pods))
	}
}
