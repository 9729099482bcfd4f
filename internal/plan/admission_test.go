package plan

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestAdmissionHoldsTheJobLikeASuspension(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).Obj()
	plan := func(a *Admission) Result {
		return Plan(Input{Job: job.DeepCopy(), HasService: true, Now: time.Unix(1000, 0), Admission: a})
	}
	held := plan(&Admission{Queue: "team-a", Workload: "wl", Reason: musterv1.ReasonWaitingForAdmission, Message: "waiting for team-a"})
	if len(held.CreatePods) != 0 {
		t.Errorf("a job Kueue has not admitted creates %d pods", len(held.CreatePods))
	}
	c := held.Status.Condition(musterv1.ConditionSuspended)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(musterv1.ReasonWaitingForAdmission) || c.Message != "waiting for team-a" {
		t.Errorf("Suspended = %+v", c)
	}
	if s := held.Status.Scheduling; s == nil || s.LocalQueue != "team-a" || s.Workload != "wl" || s.ClusterQueue != "" {
		t.Errorf("status.scheduling = %+v", s)
	}

	// Kueue's later word on why the job waits replaces the message,
	// without another event: the hold is the same.
	job.Status = held.Status
	again := plan(&Admission{Queue: "team-a", Workload: "wl", Reason: musterv1.ReasonWaitingForAdmission,
		Message: "waiting for team-a: topology allows to fit only 1 out of 2 pod(s)"})
	if c := again.Status.Condition(musterv1.ConditionSuspended); c == nil || c.Message != "waiting for team-a: topology allows to fit only 1 out of 2 pod(s)" {
		t.Errorf("Suspended after Kueue's word = %+v", c)
	}
	for _, e := range again.Events {
		if e.Reason == musterv1.EventReason(musterv1.ReasonWaitingForAdmission) {
			t.Errorf("a new message of the same hold is another event: %+v", e)
		}
	}

	job.Status = again.Status
	run := plan(&Admission{Queue: "team-a", Workload: "wl", Admitted: true, ClusterQueue: "cq"})
	if len(run.CreatePods) != 2 {
		t.Errorf("an admitted job creates %d pods, want 2", len(run.CreatePods))
	}
	if run.Status.IsTrue(musterv1.ConditionSuspended) || run.Status.Scheduling.ClusterQueue != "cq" {
		t.Errorf("admitted: suspended %v, status.scheduling %+v", run.Status.IsTrue(musterv1.ConditionSuspended), run.Status.Scheduling)
	}
}

// The gang and admission steps change the plan's status, never the job
// the plan was made from (the controller's cache holds it).
func TestGangAndAdmissionLeaveTheInputJob(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).Obj()
	job.Status.Scheduling = &musterv1.SchedulingStatus{Backend: musterv1.GangNative, PodGroup: "j-0", MinAvailable: 2}
	before := job.DeepCopy()
	res := Plan(Input{Job: job, HasService: true, Now: time.Unix(1000, 0),
		Gang:      &Gang{Backend: musterv1.GangNative, MinAvailable: 2, Exists: true},
		Admission: &Admission{Queue: "q", Workload: "wl", Admitted: true, ClusterQueue: "cq"}})
	if !equality.Semantic.DeepEqual(before, job) {
		t.Fatalf("the plan changed its input job:\n%+v\n%+v", before.Status.Scheduling, job.Status.Scheduling)
	}
	if res.Status.Scheduling.ClusterQueue != "cq" {
		t.Errorf("status.scheduling = %+v", res.Status.Scheduling)
	}
}

// Kueue's partial admission: a scalable role admitted smaller runs at the
// admitted size, never below its minimum; fixed roles keep theirs.
func TestPartialAdmissionRunsAtTheAdmittedSize(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("ps", 1).Role("w", 6).Scalable(2, 6).Obj()
	res := Plan(Input{Job: job, HasService: true, Now: time.Unix(1000, 0),
		Admission: &Admission{Queue: "q", Workload: "wl", Admitted: true, ClusterQueue: "cq", Counts: map[string]int32{"w": 3}}})
	roles := map[string]int{}
	for _, p := range res.CreatePods {
		roles[p.Labels[musterv1.LabelRole]]++
	}
	if roles["ps"] != 1 || roles["w"] != 3 {
		t.Errorf("created %v, want ps 1 and w 3", roles)
	}
	below := Plan(Input{Job: job, HasService: true, Now: time.Unix(1000, 0),
		Admission: &Admission{Admitted: true, Counts: map[string]int32{"w": 1}}})
	if n := len(below.CreatePods); n != 1+2 {
		t.Errorf("admitted below the minimum: %d pods, want the minimum's 2 and the ps", n)
	}
}
