package observe

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// inPlacePod is a pod asked for asked in-place restarts whose watcher the
// node restarted done times, its last end being lastReason ("" for none).
func inPlacePod(asked string, done int32, lastReason string, restarting bool) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{musterv1.AnnotationInPlaceRestarts: asked}}}
	w := corev1.ContainerStatus{Name: objects.RestartWatcherName, RestartCount: done,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if lastReason != "" {
		w.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: lastReason, ExitCode: 137}
	}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{w}
	if restarting {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue}}
	}
	return pod
}

func TestInPlaceOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want InPlaceRun
	}{
		{"a pod made to be re-created", &corev1.Pod{}, NotInPlace},
		{"a first run", inPlacePod("0", 0, "", false), RunCurrent},
		{"a first run not started yet", func() *corev1.Pod {
			p := inPlacePod("0", 0, "", false)
			p.Status.InitContainerStatuses = nil
			return p
		}(), RunCurrent},
		{"asked, the watcher has not exited yet", inPlacePod("1", 0, "", false), RunRestarting},
		{"asked, the node is restarting every container", inPlacePod("1", 0, "", true), RunRestarting},
		{"the node reports the watcher restarted but still restarts the rest", inPlacePod("1", 1, RestartingAllContainers, true), RunRestarting},
		{"asked and done", inPlacePod("1", 1, RestartingAllContainers, false), RunCurrent},
		{"restarted by a training container's exit", inPlacePod("1", 2, RestartingAllContainers, false), RunRestartedUnasked},
		{"the watcher crashed and was restarted alone", inPlacePod("1", 2, "Error", false), RunCurrent},
		{"an annotation that is not a number", inPlacePod("x", 0, "", false), NotInPlace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InPlaceOf(tc.pod); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}
