package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// The first outcome decided in a plan stands; failing for good after it
// only takes its retry away.
func TestVerdictFirstOutcomeStands(t *testing.T) {
	var v jobDecision
	if v.decided() {
		t.Fatal("a plan starts undecided")
	}
	first := musterv1.CompletionStatus{Reason: musterv1.ReasonDeadlineExceeded}
	v = v.fail(first)
	w := v.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonBackoffLimitExceeded})
	if w.outcome.Completion.Reason != first.Reason || !w.outcome.NoRetry {
		t.Fatalf("failForGood after fail: %+v", w.outcome)
	}
	if v.outcome.NoRetry {
		t.Fatal("a jobDecision is a value: deciding further does not change an earlier copy")
	}
}

// The working status is the plan's own: changing it leaves the status it
// was made from as it was.
func TestWorkingStatusLeavesItsInput(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("w", 2).Elastic(1, 3).WithDefaults().Obj()
	job.Status = musterv1.TrainingJobStatus{
		Roles:    []musterv1.RoleStatus{{Name: "w", Tasks: []musterv1.TaskStatus{{Index: 0, Count: 2, State: musterv1.TaskRunning}}}},
		Elastic:  &musterv1.ElasticStatus{StoreRestarts: 1},
		Attempts: []musterv1.AttemptStatus{{ID: 0}},
	}
	before := job.Status.DeepCopy()
	st := workingStatus(job, &job.Status)
	st.Roles[0].Tasks[1].State = musterv1.TaskFailed
	st.Roles[0].Name = "x"
	st.Elastic.StoreRestarts = 5
	st.Attempts = append(st.Attempts, musterv1.AttemptStatus{ID: 1})
	st.Attempts[0].ID = 9
	(&planContext{job: job}).setCondition(st, musterv1.ConditionRunning, true, musterv1.ReasonPodsRunning, "")
	if !equality.Semantic.DeepEqual(*before, job.Status) {
		t.Fatalf("the input status changed:\n%+v\n%+v", *before, job.Status)
	}
}
