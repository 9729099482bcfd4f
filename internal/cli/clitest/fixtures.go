package clitest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(Now.Add(-d)); return &t }

func cond(t musterv1.ConditionType, s metav1.ConditionStatus, reason musterv1.ConditionReason, msg string, age time.Duration) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: s, Reason: string(reason), Message: msg, LastTransitionTime: *ago(age)}
}

// ElasticJob is "pet": a launcher and an elastic world of 2 to 4 workers,
// gang-scheduled natively, in its second attempt, with an autoscaler at
// work, a worker restarted after an OOM kill, and a TensorBoard.
func ElasticJob() *musterv1.TrainingJob {
	return testutil.MakeJob("pet", "team").CreatedAt(Now.Add(-2*time.Hour)).
		Role("launcher", 1).Role("worker", 3).Elastic(2, 4).BackoffLimit(5).TensorBoard("runs", 10*time.Minute).
		Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative, PriorityClassName: "high"}).
		Status(func(s *musterv1.TrainingJobStatus) {
			s.Phase, s.Ready, s.Attempt, s.Replicas = musterv1.PhaseRunning, "4/4", 1, 3
			s.StartTime = ago(90 * time.Minute)
			s.Restarts = musterv1.RestartCounts{Total: 3, Accountable: 2}
			s.Conditions = []metav1.Condition{
				cond(musterv1.ConditionCreated, metav1.ConditionTrue, musterv1.ReasonCreated, "the job was accepted and its Service made", 2*time.Hour),
				cond(musterv1.ConditionRunning, metav1.ConditionTrue, musterv1.ReasonPodsRunning, "4 of 4 tasks running", 10*time.Minute),
				cond(musterv1.ConditionRestarting, metav1.ConditionFalse, musterv1.ReasonTaskRestarting, "0 tasks are being replaced", 10*time.Minute),
				cond(musterv1.ConditionGangScheduled, metav1.ConditionTrue, musterv1.ReasonGangScheduled, "3 of 3 members placed", 89*time.Minute),
				cond(musterv1.ConditionTensorBoardReady, metav1.ConditionTrue, musterv1.ReasonReady, "serving at http://pet-tensorboard.team.svc:6006", 2*time.Hour),
			}
			s.TensorBoard = musterv1.TensorBoardStatus{Address: "http://pet-tensorboard.team.svc:6006"}
			s.Attempts = []musterv1.AttemptStatus{
				{ID: 0, StartTime: ago(2 * time.Hour), CompletionTime: ago(90 * time.Minute),
					Completion: &musterv1.CompletionStatus{Reason: musterv1.ReasonJobRestarting, Message: "worker-1 lost its node: a new attempt"}},
				{ID: 1, StartTime: ago(90 * time.Minute)},
			}
			s.Roles = []musterv1.RoleStatus{
				{Name: "launcher", Replicas: 1, Running: 1, Tasks: []musterv1.TaskStatus{
					{Index: 0, State: musterv1.TaskRunning, Pod: "pet-launcher-0", Attempts: 1}}},
				{Name: "worker", Replicas: 3, Running: 3, Tasks: []musterv1.TaskStatus{
					{Index: 0, State: musterv1.TaskRunning, Pod: "pet-worker-0", Attempts: 1},
					{Index: 1, State: musterv1.TaskRunning, Pod: "pet-worker-1", Attempts: 3, Restarts: 2, LastExit: &musterv1.ExitStatus{
						Code: 137, Reason: "OOMKilled", Phrase: "ContainerOOMKilled", Attributes: []string{"Transient"},
						Message: "the container used 8Gi,\nits limit", FinishedAt: ago(12 * time.Minute)}},
					{Index: 2, State: musterv1.TaskRunning, Pod: "pet-worker-2", Attempts: 2, Restarts: 1, LastExit: &musterv1.ExitStatus{
						Code: 143, Reason: "Error", Phrase: "ContainerSigTermReceived", Attributes: []string{"Transient"}, FinishedAt: ago(40 * time.Minute)}},
				}},
			}
			s.Elastic = &musterv1.ElasticStatus{Endpoint: "pet-store.pet:29400", StorePod: "pet-store", StoreRestarts: 1}
			s.Autoscaler = &musterv1.AutoscalerStatus{Phase: "Exploring", Reason: "ScaledUp", Message: "3 workers gave 12% more than 2",
				Replicas: 3, LastGood: 3, ResizedAt: ago(30 * time.Minute), SampledAt: ago(time.Minute),
				LastSample: "468.5", LastSampleAt: ago(2 * time.Minute),
				Sizes: []musterv1.SizeThroughput{{Replicas: 2, Samples: []string{"410", "415"}, Throughput: "412.5"}, {Replicas: 3, Samples: []string{"462"}, Throughput: "462"}}}
			s.Scheduling = &musterv1.SchedulingStatus{Backend: musterv1.GangNative, PodGroup: "pet-1", MinAvailable: 3,
				LocalQueue: "team-a", Workload: "trainingjob-pet-3f2a1", ClusterQueue: "gpu-cq"}
		}).Obj()
}

// FailedJob is "bad": two workers, failed when the restart budget ran out.
func FailedJob() *musterv1.TrainingJob {
	return testutil.MakeJob("bad", "team").CreatedAt(Now.Add(-26*time.Hour)).Role("worker", 2).BackoffLimit(1).Labels("team", "vision").
		Status(func(s *musterv1.TrainingJobStatus) {
			s.Phase, s.Ready = musterv1.PhaseFailed, "0/2"
			s.StartTime, s.CompletionTime = ago(26*time.Hour), ago(25*time.Hour)
			s.Restarts = musterv1.RestartCounts{Total: 1, Accountable: 1}
			s.Completion = &musterv1.CompletionStatus{Reason: musterv1.ReasonBackoffLimitExceeded,
				Message: "task worker-0 needed a restart and the job had used its 1 accountable restarts",
				Role:    "worker", Index: ptr.To[int32](0), ExitCode: ptr.To[int32](1), Code: ptr.To[int32](1), Phrase: "ContainerFailed", Attributes: []string{"Permanent"}}
			s.Conditions = []metav1.Condition{
				cond(musterv1.ConditionFailed, metav1.ConditionTrue, musterv1.ReasonBackoffLimitExceeded, s.Completion.Message, 25*time.Hour),
			}
			s.Roles = []musterv1.RoleStatus{{Name: "worker", Replicas: 2, Failed: 1, Tasks: []musterv1.TaskStatus{
				{Index: 0, State: musterv1.TaskFailed, Pod: "bad-worker-0", Attempts: 2, Restarts: 1, LastExit: &musterv1.ExitStatus{
					Code: 1, Reason: "Error", Phrase: "ContainerFailed", Attributes: []string{"Permanent"}, FinishedAt: ago(25 * time.Hour),
					Message: CrashMessage}},
				{Index: 1, State: musterv1.TaskStopped, Pod: "bad-worker-1", Attempts: 1},
			}}}
		}).Obj()
}

// CrashMessage is a Python crash's termination message as status keeps it:
// the end of the log's tail, its traceback cut.
const CrashMessage = "…tiprocessing/api.py\", line 162, in to_map\n" +
	"    map[i] = val_or_map.get(i, Std.NONE)\n" +
	"             ^^^^^^^^^^^^^^\n" +
	"AttributeError: 'NoneType' object has no attribute 'get'"

// QueuedJob is "big" in another namespace: 64 workers, waiting in a
// Volcano queue.
func QueuedJob() *musterv1.TrainingJob {
	return testutil.MakeJob("big", "research").CreatedAt(Now.Add(-5*time.Minute)).Role("worker", 64).
		Scheduling(musterv1.Scheduling{Backend: musterv1.GangVolcano, VolcanoQueue: "research", MinAvailable: 64}).
		Status(func(s *musterv1.TrainingJobStatus) {
			s.Phase, s.Ready = musterv1.PhasePending, "0/64"
			s.Conditions = []metav1.Condition{
				cond(musterv1.ConditionCreated, metav1.ConditionTrue, musterv1.ReasonCreated, "the job was accepted and its Service made", 5*time.Minute),
				cond(musterv1.ConditionRunning, metav1.ConditionFalse, musterv1.ReasonPodsPending, "0 of 64 tasks running", 5*time.Minute),
				cond(musterv1.ConditionGangScheduled, metav1.ConditionFalse, musterv1.ReasonGangQueued, "queue research is full: 64 GPUs asked, 16 free", 5*time.Minute),
			}
			s.Roles = []musterv1.RoleStatus{{Name: "worker", Replicas: 64, Tasks: []musterv1.TaskStatus{
				{Index: 0, Count: 64, State: musterv1.TaskCreating}}}}
			s.Scheduling = &musterv1.SchedulingStatus{Backend: musterv1.GangVolcano, PodGroup: "big-0", MinAvailable: 64}
		}).Obj()
}

// ElasticPods are pet's running pods: worker-1 in its third instance.
func ElasticPods() []*corev1.Pod {
	job := ElasticJob()
	return []*corev1.Pod{
		testutil.MakePod(job, "launcher", 0).StartedAt(Now.Add(-90 * time.Minute)).Obj(),
		testutil.MakePod(job, "worker", 0).StartedAt(Now.Add(-90 * time.Minute)).Obj(),
		testutil.MakePod(job, "worker", 1).Attempt(3).StartedAt(Now.Add(-12 * time.Minute)).Obj(),
		testutil.MakePod(job, "worker", 2).Attempt(2).StartedAt(Now.Add(-40 * time.Minute)).Obj(),
	}
}

// ElasticEvents are what happened to pet and its objects, in no order.
func ElasticEvents() []*corev1.Event {
	return []*corev1.Event{
		Event("team", "TrainingJob", "pet", corev1.EventTypeNormal, string(musterv1.EventReasonPodsCreated), "created 4 pods of attempt 1", 89*time.Minute),
		Event("team", "TrainingJob", "pet", corev1.EventTypeWarning, string(musterv1.EventReasonTaskRestarting), "worker-1 exited 137 (OOMKilled): replacing it", 12*time.Minute),
		Event("team", "Pod", "pet-worker-1", corev1.EventTypeWarning, "BackOff", "pulling image", 11*time.Minute),
		Event("team", "TrainingJob", "pet", corev1.EventTypeNormal, string(musterv1.EventReasonAutoscaling), "scaled the workers from 2 to 3", 30*time.Minute),
		Event("team", "Pod", "petunia-worker-0", corev1.EventTypeNormal, "Started", "not pet's", time.Minute),
		Event("team", "PodGroup", "pet-1", corev1.EventTypeNormal, "Scheduled", "all 3 members placed", 89*time.Minute),
		Event("team", "TrainingJob", "bad", corev1.EventTypeWarning, string(musterv1.EndedEventReason(musterv1.ReasonBackoffLimitExceeded)), "out of restarts", 25*time.Hour),
	}
}
