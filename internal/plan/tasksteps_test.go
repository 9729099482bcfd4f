package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/testutil"
)

// observeRole is what each task's pod asks of the plan, before anything is
// decided: only an ended pod carries a decision, and a plan records a
// bounded number of ends.
func TestObserveRole(t *testing.T) {
	job := topology.Effective(testutil.MakeJob("j", "ns").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	role := &job.Spec.Roles[0]
	at := time.Unix(500, 0)
	task := func(i int32, state musterv1.TaskState, edit func(*musterv1.TaskStatus)) musterv1.TaskStatus {
		ts := musterv1.TaskStatus{Index: i, State: state, Attempts: 1}
		if edit != nil {
			edit(&ts)
		}
		return ts
	}
	withUID := func(ts *musterv1.TaskStatus) { ts.PodUID = "j-w-0-uid-1" }
	type want struct {
		Kinds  []stepKind
		Action musterv1.FailureAction
		Left   int
	}
	cases := map[string]struct {
		tasks    []musterv1.TaskStatus
		pods     []*corev1.Pod
		waitFor  string
		endsLeft int
		want     want
	}{
		"new tasks are made pods": {
			endsLeft: 3, want: want{Kinds: []stepKind{stepCreate, stepCreate}, Left: 3},
		},
		"held back by a dependency": {
			waitFor: "role ps to be Running", endsLeft: 3, want: want{Kinds: []stepKind{stepNone, stepNone}, Left: 3},
		},
		"pods pending and running": {
			pods:     []*corev1.Pod{testutil.MakePod(job, "w", 0).Obj(), testutil.MakePod(job, "w", 1).Running().Obj()},
			tasks:    []musterv1.TaskStatus{task(0, musterv1.TaskPending, nil), task(1, musterv1.TaskPending, nil)},
			endsLeft: 3, want: want{Kinds: []stepKind{stepPending, stepRunning}, Left: 3},
		},
		"an ended pod is classified and decided": {
			pods:     []*corev1.Pod{testutil.MakePod(job, "w", 0).Exited(1, "Error", at).Obj(), testutil.MakePod(job, "w", 1).Deleting().Obj()},
			tasks:    []musterv1.TaskStatus{task(0, musterv1.TaskRunning, withUID), task(1, musterv1.TaskRunning, nil)},
			endsLeft: 3, want: want{Kinds: []stepKind{stepEnded, stepTerminating}, Action: musterv1.ActionRestartTask, Left: 2},
		},
		"a vanished pod ended unseen": {
			tasks:    []musterv1.TaskStatus{task(0, musterv1.TaskRunning, withUID), task(1, musterv1.TaskSucceeded, nil)},
			endsLeft: 3, want: want{Kinds: []stepKind{stepEnded, stepNone}, Action: musterv1.ActionRestartTask, Left: 2},
		},
		"no ends left: recorded by the next plan": {
			pods:     []*corev1.Pod{testutil.MakePod(job, "w", 0).Exited(1, "Error", at).Obj()},
			tasks:    []musterv1.TaskStatus{task(0, musterv1.TaskRunning, withUID), task(1, musterv1.TaskRestarting, nil)},
			endsLeft: 0, want: want{Kinds: []stepKind{stepEndLater, stepCreate}, Left: 0},
		},
		"the ended instance of a restart is removed": {
			pods: []*corev1.Pod{testutil.MakePod(job, "w", 0).Exited(1, "Error", at).Obj()},
			tasks: []musterv1.TaskStatus{task(0, musterv1.TaskRestarting, func(ts *musterv1.TaskStatus) {
				ts.LastExit = &musterv1.ExitStatus{PodUID: "j-w-0-uid-1"}
			}), task(1, musterv1.TaskRestarting, nil)},
			endsLeft: 3, want: want{Kinds: []stepKind{stepRemoveEnded, stepCreate}, Left: 3},
		},
		"a task beyond replicas is scaled down": {
			tasks: []musterv1.TaskStatus{task(0, musterv1.TaskRunning, nil), task(1, musterv1.TaskRunning, nil),
				task(2, musterv1.TaskRunning, nil)},
			pods:     []*corev1.Pod{testutil.MakePod(job, "w", 0).Running().Obj(), testutil.MakePod(job, "w", 1).Running().Obj()},
			endsLeft: 3, want: want{Kinds: []stepKind{stepRunning, stepRunning, stepScaleDown}, Left: 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status := &musterv1.TrainingJobStatus{}
			if tc.tasks != nil {
				status.Roles = []musterv1.RoleStatus{{Name: "w", Tasks: tc.tasks}}
			}
			expandTasks(job, status)
			c := newContext(job, at, tc.pods, status).withClassifier()
			steps, left := observeRole(c, role, roleStatus(status, "w"), tc.waitFor, tc.endsLeft)
			got := want{Left: left}
			for _, s := range steps {
				got.Kinds = append(got.Kinds, s.kind)
				if s.kind == stepEnded {
					got.Action = s.decision.Action
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}
