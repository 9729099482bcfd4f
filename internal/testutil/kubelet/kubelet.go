// Package kubelet has builders for what a node reports of a pod that
// restarts in place, as kubelet 1.36 reports it. Tests of every tier use
// them instead of writing pod statuses by hand. A package of its own, not
// part of testutil: it speaks the planner's vocabulary (objects, observe),
// whose own tests use testutil.
package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// Started makes pod, made to restart in place, run its first run since
// at: the restart watcher and every container running, none restarted.
// Whatever the pod showed before is dropped.
func Started(pod *corev1.Pod, at time.Time) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: objects.RestartWatcherName, State: running}}}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, State: running})
	}
}

// RestartedAllContainers makes pod show its node restarted every container
// of it in place once more, at (RestartAllContainers): the watcher and
// every container restarted once more and running again since at, each
// container's last end the kubelet's removal, and the restart no longer
// under way.
func RestartedAllContainers(pod *corev1.Pod, at time.Time) {
	t := metav1.NewTime(at)
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}
	pod.Status.Phase = corev1.PodRunning
	if w := observe.WatcherStatus(pod); w != nil {
		w.RestartCount++
		w.State = running
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		cs.RestartCount++
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: observe.RestartingAllContainers, FinishedAt: t}}
		cs.State = running
	}
	conditions := pod.Status.Conditions[:0]
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.AllContainersRestarting {
			conditions = append(conditions, c)
		}
	}
	pod.Status.Conditions = conditions
}

// RestartedAsAsked makes pod show its node has done every in-place restart
// asked of it (its muster.dev/in-place-restarts annotation), at: started
// if it did not run, then all its containers restarted once for each
// restart asked and not done.
func RestartedAsAsked(pod *corev1.Pod, at time.Time) {
	asked, _ := observe.AskedRestarts(pod)
	if observe.WatcherStatus(pod) == nil {
		Started(pod, at)
	}
	for observe.WatcherStatus(pod).RestartCount < int32(asked) {
		RestartedAllContainers(pod, at)
	}
}

// WatcherRestartedAlone makes pod's restart watcher show it exited on its
// own (a crash, an OOM kill) at at and was restarted alone, as its restart
// policy has the node do: its restart count one more, its exit kept as
// its last end, running again since at; the training containers run on.
// The watcher compares with the value it last acted on (restartwatch.Start),
// so one restarted with an ask pending acts on it at once: the node then
// restarts every container.
func WatcherRestartedAlone(pod *corev1.Pod, at time.Time) {
	w := observe.WatcherStatus(pod)
	if w == nil || w.State.Running == nil {
		return
	}
	asked, _ := observe.AskedRestarts(pod)
	pending := int(w.RestartCount) < asked
	t := metav1.NewTime(at)
	w.RestartCount++
	w.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 2, Reason: "Error", StartedAt: w.State.Running.StartedAt, FinishedAt: t}}
	w.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}
	if pending {
		RestartedAllContainers(pod, at)
	}
}

// RestartedAlone makes pod's training container (its first) show it failed
// with code at and was restarted alone, as its restart rule has the node
// do: restarted once more, its exit kept as its last end. The pod runs on.
// Its state is left as it was: what a node shows of the new start (its
// time, or a back-off) differs, and the planner reads only the last end.
func RestartedAlone(pod *corev1.Pod, code int32, at time.Time) {
	cs := &pod.Status.ContainerStatuses[0]
	cs.RestartCount++
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: "Error", FinishedAt: metav1.NewTime(at)}}
}

// Succeeded makes pod show every training container exited 0 at at, ending
// the pod: phase Succeeded, and its restart watcher, a sidecar, stopped
// with it, keeping its restart count, as the kubelet stops a pod's
// sidecars once its containers have ended.
func Succeeded(pod *corev1.Pod, at time.Time) {
	t := metav1.NewTime(at)
	pod.Status.Phase = corev1.PodSucceeded
	if w := observe.WatcherStatus(pod); w != nil {
		w.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: t}}
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: t}}
	}
}
