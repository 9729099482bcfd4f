package observe

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// RestartingAllContainers is the reason the kubelet gives a container it
// removed to restart every container of its pod.
const RestartingAllContainers = "RestartingAllContainers"

// InPlaceRun is where a pod that can restart in place stands between the
// restarts the operator asked of it and those its node has done.
type InPlaceRun int

const (
	// NotInPlace: the pod was not made to restart in place.
	NotInPlace InPlaceRun = iota
	// RunCurrent: every restart asked is done, and none more; the
	// containers run what the pod's labels say.
	RunCurrent
	// RunRestarting: a restart was asked or is under way and not done:
	// what the containers show belongs to the run before.
	RunRestarting
	// RunRestartedUnasked: the node restarted the pod more often than the
	// operator asked: a training container failed and its restart rule
	// restarted the pod.
	RunRestartedUnasked
)

// InPlaceOf is where pod stands, from the restarts asked of it (its
// muster.dev/in-place-restarts annotation) and those its node did: each
// restart of all containers counts one restart of the restart watcher,
// which exits only to ask for one, and is restarted alone only if it
// crashed (its last end is then its own, not the kubelet's removal).
func InPlaceOf(pod *corev1.Pod) InPlaceRun {
	v, ok := pod.Annotations[musterv1.AnnotationInPlaceRestarts]
	if !ok {
		return NotInPlace
	}
	asked, err := strconv.Atoi(v)
	if err != nil {
		return NotInPlace
	}
	if restartingAll(pod) {
		return RunRestarting
	}
	w := watcherStatus(pod)
	if w == nil {
		// Not started yet: the first run, or the pod is still being
		// placed. Any restart asked is done by the fresh start.
		return RunCurrent
	}
	done := int(w.RestartCount)
	switch {
	case done < asked:
		return RunRestarting
	case done == asked:
		return RunCurrent
	case crashedAlone(w):
		return RunCurrent
	default:
		return RunRestartedUnasked
	}
}

// restartingAll is whether the node is restarting every container of pod.
func restartingAll(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.AllContainersRestarting && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func watcherStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == objects.RestartWatcherName {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// crashedAlone is whether the watcher's last restart was its own: a
// restart of every container ends it as the kubelet's removal.
func crashedAlone(w *corev1.ContainerStatus) bool {
	t := w.LastTerminationState.Terminated
	return t != nil && t.Reason != RestartingAllContainers
}
