package observe

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// inPlacePod is a running pod that can restart in place, asked for asked
// restarts, whose watcher the node restarted done times and started last
// at t0.
func inPlacePod(t *testing.T, asked string, done int32) *corev1.Pod {
	t.Helper()
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 1).Obj()
	pod, err := objects.DesiredPod(job, &job.Spec.Roles[0], 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	objects.ApplyInPlace(pod, objects.InPlace{WatcherImage: "m"})
	pod.Annotations[musterv1.AnnotationInPlaceRestarts] = asked
	pod.Status.Phase = corev1.PodRunning
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{
		Name: objects.RestartWatcherName, RestartCount: done,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
	}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, RestartCount: done,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
	}}
	return pod
}

func restarting(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue})
	return p
}

func TestInPlaceOf(t *testing.T) {
	notStarted := inPlacePod(t, "0", 0)
	notStarted.Status.InitContainerStatuses = nil
	dropped := inPlacePod(t, "0", 0)
	dropped.Spec.InitContainers[0].RestartPolicyRules = nil
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want InPlaceRun
	}{
		{"a pod made to be re-created", &corev1.Pod{}, NotInPlace},
		{"a pod whose rules the API server dropped", dropped, NotInPlace},
		{"an annotation that is not a number", inPlacePod(t, "x", 0), NotInPlace},
		{"a first run", inPlacePod(t, "0", 0), RunCurrent},
		{"a first run not started yet", notStarted, RunCurrent},
		{"asked, the watcher has not exited yet", inPlacePod(t, "1", 0), RunRestarting},
		{"asked, the node is restarting every container", restarting(inPlacePod(t, "1", 0)), RunRestarting},
		{"the watcher restarted, the rest still restarting", restarting(inPlacePod(t, "1", 1)), RunRestarting},
		{"asked and done", inPlacePod(t, "1", 1), RunCurrent},
		{"the watcher crashed once and was restarted alone", inPlacePod(t, "1", 2), RunCurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InPlaceOf(tc.pod); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNextInPlaceRestart(t *testing.T) {
	for _, tc := range []struct {
		asked string
		done  int32
		want  int32
	}{
		{"0", 0, 1},
		{"1", 1, 2},
		{"1", 0, 1}, // not done yet: asked again, the same
		{"1", 2, 3}, // a watcher crash is taken up
	} {
		if got := NextInPlaceRestart(inPlacePod(t, tc.asked, tc.done)); got != tc.want {
			t.Errorf("asked %s, done %d: got %d, want %d", tc.asked, tc.done, got, tc.want)
		}
	}
}

func TestInPlaceFailure(t *testing.T) {
	failedAt := func(p *corev1.Pod, at time.Time, reason string) *corev1.Pod {
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: 3, Reason: reason, FinishedAt: metav1.NewTime(at)}
		return p
	}
	if InPlaceFailure(inPlacePod(t, "0", 0)) != nil {
		t.Error("a pod that runs has not failed")
	}
	got := InPlaceFailure(failedAt(inPlacePod(t, "0", 0), t0.Add(time.Minute), "Error"))
	if got == nil || got.Status.Phase != corev1.PodFailed {
		t.Fatalf("a container that failed in this run and was restarted alone: got %v", got)
	}
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 3 {
		t.Errorf("the failed container must be terminated with its exit, got %+v", got.Status.ContainerStatuses[0].State)
	}
	if InPlaceFailure(failedAt(inPlacePod(t, "1", 1), t0, RestartingAllContainers)) != nil {
		t.Error("the kubelet's removal for a restart of all containers is no failure")
	}
	if InPlaceFailure(failedAt(inPlacePod(t, "1", 1), t0.Add(-time.Second), "Error")) != nil {
		t.Error("an end from before this run's watcher started belongs to the run before")
	}
	if InPlaceFailure(failedAt(inPlacePod(t, "1", 1), t0, "Error")) != nil {
		t.Error("an end within the second the run began is taken for the run before's: it is never counted twice")
	}
	if InPlaceFailure(failedAt(inPlacePod(t, "2", 1), t0.Add(time.Minute), "Error")) != nil {
		t.Error("a pod being restarted shows the run before: no failure of the current one")
	}
}
