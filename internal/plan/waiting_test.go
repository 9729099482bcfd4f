package plan

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// waitsFor makes pod's first container wait for reason, as the node shows
// a container it cannot start.
func waitsFor(pod *corev1.Pod, reason string) {
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}}
}

// A task whose pod cannot start says why in its status, for as long as it
// cannot: the job alone would say only Pending.
func TestATaskSaysWhyItsPodWaits(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).WithDefaults().Obj())
	w.step()
	main := w.pods["j-w-1"].Spec.Containers[0].Name
	waitsFor(w.pods["j-w-1"], "ErrImagePull")
	waitsFor(w.pods["j-w-0"], "ContainerCreating")
	w.step()
	if got, want := w.task("w", 1).Waiting, main+": ImagePullBackOff"; got != want {
		t.Errorf("j-w-1 waits for %q, want %q", got, want)
	}
	if got := w.task("w", 0).Waiting; got != "" {
		t.Errorf("a pod being created waits its turn, got %q", got)
	}
	w.pods["j-w-1"].Status = corev1.PodStatus{Phase: corev1.PodRunning}
	w.step()
	if got := w.task("w", 1).Waiting; got != "" {
		t.Errorf("a running pod waits for nothing, got %q", got)
	}
}

// Status stays small however many pods wait, for however many reasons:
// each role's status tells why for its first few tasks.
func TestWhyPodsWaitIsToldForAFewTasks(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 100).WithDefaults().Obj())
	w.step()
	for i := range 100 {
		waitsFor(w.pods[fmt.Sprintf("j-w-%d", i)], []string{"CreateContainerConfigError", "ImagePullBackOff"}[i%2])
	}
	w.step()
	told, entries := 0, 0
	for _, rs := range w.job.Status.Roles {
		for _, ts := range rs.Tasks {
			entries++
			if ts.Waiting != "" {
				told++
			}
		}
	}
	if told != recentWaiting {
		t.Errorf("%d entries say why their pods wait, want %d", told, recentWaiting)
	}
	if entries > recentWaiting+1 {
		t.Errorf("status has %d task entries for 100 waiting tasks", entries)
	}
	if ts := w.task("w", 0); ts.State != musterv1.TaskPending || ts.Waiting == "" {
		t.Errorf("the first task: %+v", ts)
	}
}
