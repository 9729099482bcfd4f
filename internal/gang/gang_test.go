package gang_test

import (
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestResolveKeepsTheBackendAJobStartedWith(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("w", 2).Obj()
	if got := gang.Resolve(job, ""); got != musterv1.GangNone {
		t.Errorf("no spec, no default: got %s, want None", got)
	}
	if got := gang.Resolve(job, musterv1.GangNative); got != musterv1.GangNative {
		t.Errorf("operator default: got %s, want Native", got)
	}
	job.Spec.Scheduling.Backend = musterv1.GangVolcano
	if got := gang.Resolve(job, musterv1.GangNative); got != musterv1.GangVolcano {
		t.Errorf("the spec wins over the default: got %s", got)
	}
	job.Status.Scheduling = &musterv1.SchedulingStatus{Backend: musterv1.GangNone}
	if got := gang.Resolve(job, musterv1.GangNative); got != musterv1.GangNone {
		t.Errorf("the status records the backend for the job's life: got %s", got)
	}
}

func TestForGangsTheJobsMinimum(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("ps", 2).Role("trainer", 0).Scalable(3, 8).ScalingReplicas(6).Obj()
	if got := gang.For(job, musterv1.GangNone, 0); got != nil {
		t.Fatalf("None has no gang, got %+v", got)
	}
	g := gang.For(job, musterv1.GangVolcano, 2)
	if g.MinAvailable != 5 {
		t.Errorf("MinAvailable = %d, want 2 pservers + 3 trainers (minReplicas), not the 6 the job runs", g.MinAvailable)
	}
	if g.Name != "j-2" || g.Attempt != 2 || g.Queue != "default" {
		t.Errorf("got name %q attempt %d queue %q", g.Name, g.Attempt, g.Queue)
	}
	job.Spec.Scheduling = musterv1.Scheduling{MinAvailable: 3, VolcanoQueue: "research",
		Roles: []musterv1.RoleScheduling{{Name: "trainer", MinAvailable: 1}, {Name: "ps", MinAvailable: 2}}}
	g = gang.For(job, musterv1.GangVolcano, 0)
	if g.MinAvailable != 3 || g.Queue != "research" {
		t.Errorf("spec values: got min %d queue %q", g.MinAvailable, g.Queue)
	}
	want := []gang.RoleMin{{Role: "ps", Min: 2}, {Role: "trainer", Min: 1}}
	if len(g.RoleMin) != 2 || g.RoleMin[0] != want[0] || g.RoleMin[1] != want[1] {
		t.Errorf("RoleMin = %+v, want %+v in spec order", g.RoleMin, want)
	}
}
