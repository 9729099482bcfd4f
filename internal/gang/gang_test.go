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

// The gang that placed a job's pods places the attempts they restart into
// in place; an attempt whose pods are all made anew gets its own.
func TestPlacingFollowsThePodsThatRestartedInPlace(t *testing.T) {
	moved := func(id, inPlace int32) musterv1.AttemptStatus {
		return musterv1.AttemptStatus{ID: id, PodRestarts: &musterv1.PodRestarts{InPlace: inPlace, Recreated: 3 - inPlace}}
	}
	cases := map[string]struct {
		attempt  int32
		podGroup string
		attempts []musterv1.AttemptStatus
		want     int32
	}{
		"the first attempt":                  {attempt: 0, want: 0},
		"re-created, no in-place record":     {attempt: 1, podGroup: "j-0", attempts: []musterv1.AttemptStatus{{ID: 0}}, want: 1},
		"re-created, every pod":              {attempt: 1, podGroup: "j-0", attempts: []musterv1.AttemptStatus{moved(0, 0)}, want: 1},
		"moved in place":                     {attempt: 1, podGroup: "j-0", attempts: []musterv1.AttemptStatus{moved(0, 3)}, want: 0},
		"partly moved in place":              {attempt: 1, podGroup: "j-0", attempts: []musterv1.AttemptStatus{moved(0, 1)}, want: 0},
		"moved in place twice":               {attempt: 2, podGroup: "j-0", attempts: []musterv1.AttemptStatus{moved(0, 3), moved(1, 3)}, want: 0},
		"moved in place after a re-creation": {attempt: 3, podGroup: "j-2", attempts: []musterv1.AttemptStatus{moved(1, 3), moved(2, 0)}, want: 3},
		"moved in place, the gang recorded":  {attempt: 3, podGroup: "j-2", attempts: []musterv1.AttemptStatus{moved(1, 0), moved(2, 3)}, want: 2},
		"another job's name":                 {attempt: 1, podGroup: "k-0", attempts: []musterv1.AttemptStatus{moved(0, 3)}, want: 1},
		"a gang of a later attempt":          {attempt: 1, podGroup: "j-5", attempts: []musterv1.AttemptStatus{moved(0, 3)}, want: 1},
		"no gang recorded":                   {attempt: 1, attempts: []musterv1.AttemptStatus{moved(0, 3)}, want: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &musterv1.TrainingJobStatus{Attempt: tc.attempt, Attempts: tc.attempts}
			if tc.podGroup != "" {
				st.Scheduling = &musterv1.SchedulingStatus{Backend: musterv1.GangVolcano, PodGroup: tc.podGroup}
			}
			if got := gang.Placing("j", st); got != tc.want {
				t.Errorf("Placing = %d, want %d", got, tc.want)
			}
		})
	}
}
