package plan

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestEffectiveCompletion(t *testing.T) {
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		want map[string]Rule
	}{
		"generic: all tasks": {
			job:  testutil.MakeJob("j", "ns").Role("a", 2).Role("b", 3).Obj(),
			want: map[string]Rule{"a": {-1, 1}, "b": {-1, 1}},
		},
		"pytorch master and workers: master decides": {
			job:  testutil.MakeJob("j", "ns").PyTorch().Role("worker", 3).Role("master", 1).Obj(),
			want: map[string]Rule{"master": {1, 1}, "worker": {-1, 1}},
		},
		"pytorch with one role: all tasks": {
			job:  testutil.MakeJob("j", "ns").PyTorch().Role("worker", 3).Obj(),
			want: map[string]Rule{"worker": {-1, 1}},
		},
		"elastic role: any worker, fails below min": {
			job:  testutil.MakeJob("j", "ns").Role("worker", 4).Elastic(2, 4).Obj(),
			want: map[string]Rule{"worker": {1, 3}},
		},
		"mpi: the launcher decides": {
			job:  testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{MPI: &musterv1.MPIRuntime{}}).Role("worker", 3).Role("launcher", 1).Obj(),
			want: map[string]Rule{"launcher": {1, 1}, "worker": {-1, 1}},
		},
		"paddle parameter server: all trainers succeeded": {
			job:  testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{}}).Role("pserver", 2).Role("trainer", 3).Obj(),
			want: map[string]Rule{"pserver": {-1, 1}, "trainer": {3, 1}},
		},
		"paddle collective: all tasks": {
			job:  testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{Mode: musterv1.PaddleCollective}}).Role("trainer", 3).Obj(),
			want: map[string]Rule{"trainer": {-1, 1}},
		},
		"tensorflow with a chief: the chief decides": {
			job:  testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{}}).Role("chief", 1).Role("ps", 2).Role("worker", 2).Obj(),
			want: map[string]Rule{"chief": {1, 1}, "ps": {-1, 1}, "worker": {-1, 1}},
		},
		"tensorflow without a chief: all workers succeeded": {
			job: testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{
				TaskTypes: []musterv1.TensorFlowTaskType{{Role: "trainer", Type: musterv1.TFWorker}},
			}}).Role("ps", 1).Role("trainer", 2).Obj(),
			want: map[string]Rule{"ps": {-1, 1}, "trainer": {2, 1}},
		},
		"the role's own policy wins": {
			job:  testutil.MakeJob("j", "ns").Role("worker", 4).Completion(4, -1).Obj(),
			want: map[string]Rule{"worker": {4, -1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, EffectiveCompletion(topology.Effective(tc.job))); diff != "" {
				t.Errorf("EffectiveCompletion (-want +got):\n%s", diff)
			}
		})
	}
}

func task(index int32, state musterv1.TaskState, endedSec int) musterv1.TaskStatus {
	t := musterv1.TaskStatus{Index: index, State: state, Pod: "j-r-" + strconv.Itoa(int(index))}
	if state == musterv1.TaskSucceeded || state == musterv1.TaskFailed {
		code := int32(0)
		if state == musterv1.TaskFailed {
			code = 1
		}
		t.LastExit = &musterv1.ExitStatus{Code: code, FinishedAt: new(metav1.NewTime(time.Unix(int64(endedSec), 0)))}
	}
	return t
}

func TestEvaluateCompletion(t *testing.T) {
	cases := map[string]struct {
		job         *musterv1.TrainingJob
		roles       []musterv1.RoleStatus
		wantNil     bool
		wantSuccess bool
		wantReason  musterv1.ConditionReason
		wantMessage string
		wantIndex   *int32
	}{
		"running tasks: not complete": {
			job:     testutil.MakeJob("j", "ns").Role("r", 2).Obj(),
			roles:   []musterv1.RoleStatus{{Name: "r", Tasks: []musterv1.TaskStatus{task(0, musterv1.TaskSucceeded, 1), task(1, musterv1.TaskRunning, 0)}}},
			wantNil: true,
		},
		"all tasks succeeded, no rule triggered": {
			job:         testutil.MakeJob("j", "ns").Role("r", 2).Obj(),
			roles:       []musterv1.RoleStatus{{Name: "r", Tasks: []musterv1.TaskStatus{task(0, musterv1.TaskSucceeded, 1), task(1, musterv1.TaskSucceeded, 2)}}},
			wantSuccess: true, wantReason: musterv1.ReasonAllTasksCompleted,
			wantMessage: "CompletedTaskCount 2 has reached TotalTaskCount 2 and no completion policy was triggered",
		},
		"minSucceeded reached: the min-th task to succeed is the trigger": {
			job: testutil.MakeJob("j", "ns").Role("worker", 4).Completion(3, -1).Obj(),
			roles: []musterv1.RoleStatus{{Name: "worker", Tasks: []musterv1.TaskStatus{
				task(0, musterv1.TaskSucceeded, 5), task(1, musterv1.TaskSucceeded, 1), task(2, musterv1.TaskSucceeded, 3), task(3, musterv1.TaskRunning, 0)}}},
			wantSuccess: true, wantReason: musterv1.ReasonCompletionPolicy,
			wantMessage: "SucceededTaskCount 3 has reached MinSucceededTaskCount 3 in role worker",
			wantIndex:   new(int32(0)),
		},
		"minFailed reached": {
			job: testutil.MakeJob("j", "ns").Role("r", 3).Completion(-1, 2).Obj(),
			roles: []musterv1.RoleStatus{{Name: "r", Tasks: []musterv1.TaskStatus{
				task(0, musterv1.TaskFailed, 2), task(1, musterv1.TaskRunning, 0), task(2, musterv1.TaskFailed, 4)}}},
			wantReason:  musterv1.ReasonCompletionPolicy,
			wantMessage: "FailedTaskCount 2 has reached MinFailedTaskCount 2 in role r, triggered by j-r-2 with exit code 1",
			wantIndex:   new(int32(2)),
		},
		"disabled rules wait for every task": {
			job: testutil.MakeJob("j", "ns").Role("r", 2).Completion(-1, -1).Obj(),
			roles: []musterv1.RoleStatus{{Name: "r", Tasks: []musterv1.TaskStatus{
				task(0, musterv1.TaskFailed, 2), task(1, musterv1.TaskRunning, 0)}}},
			wantNil: true,
		},
		"the earliest trigger across roles wins": {
			job: testutil.MakeJob("j", "ns").PyTorch().Role("master", 1).Role("worker", 2).Completion(-1, 1).Obj(),
			roles: []musterv1.RoleStatus{
				{Name: "master", Tasks: []musterv1.TaskStatus{task(0, musterv1.TaskSucceeded, 7)}},
				{Name: "worker", Tasks: []musterv1.TaskStatus{task(0, musterv1.TaskFailed, 3), task(1, musterv1.TaskRunning, 0)}},
			},
			wantReason:  musterv1.ReasonCompletionPolicy,
			wantMessage: "FailedTaskCount 1 has reached MinFailedTaskCount 1 in role worker, triggered by j-r-0 with exit code 1",
			wantIndex:   new(int32(0)),
		},
		"no tasks never completes": {
			job:     testutil.MakeJob("j", "ns").Role("r", 0).Obj(),
			roles:   []musterv1.RoleStatus{{Name: "r"}},
			wantNil: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := EvaluateCompletion(tc.job, tc.roles)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("EvaluateCompletion = %+v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatal("EvaluateCompletion = nil, want an outcome")
			}
			if got.Succeeded != tc.wantSuccess || got.Completion.Reason != tc.wantReason || got.Completion.Message != tc.wantMessage {
				t.Errorf("got %+v", got.Completion)
			}
			if diff := cmp.Diff(tc.wantIndex, got.Completion.Index); diff != "" {
				t.Errorf("trigger index (-want +got):\n%s", diff)
			}
		})
	}
}
