package observe

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// TaskIndex is the index of the task a pod was made for.
func TaskIndex(pod *corev1.Pod) int32 {
	n, _ := strconv.Atoi(pod.Labels[musterv1.LabelTaskIndex])
	return int32(n)
}

// TaskAttempt is which instance of its task a pod is, counting from 1.
func TaskAttempt(pod *corev1.Pod) int32 {
	n, _ := TaskAttemptOf(pod)
	return n
}

// TaskAttemptOf is which instance of its task a pod is, and whether its
// label says so (every pod Muster makes carries it).
func TaskAttemptOf(pod *corev1.Pod) (int32, bool) {
	n, err := strconv.Atoi(pod.Labels[musterv1.LabelTaskAttempt])
	if err != nil || n <= 0 {
		return 0, false
	}
	return int32(n), true
}

// Ended is whether the pod's containers have all stopped for good.
func Ended(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Unschedulable is whether the scheduler found no node for the pod.
func Unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// maxWaiting bounds Waiting's text, as the status schema does
// (TaskStatus.waiting).
const maxWaiting = 160

// Waiting is why pod does not run yet when one of its containers, init
// containers first, waits for a reason other than its turn: the
// container's name and the node's reason, e.g. "main: ImagePullBackOff".
// Empty when none does. ErrImagePull is told as ImagePullBackOff: the
// node alternates the two while it retries the pull, and the task's status
// would change with each.
func Waiting(pod *corev1.Pod) string {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range list {
			if reason := WaitingReason(c); reason != "" {
				s := c.Name + ": " + reason
				return s[:min(len(s), maxWaiting)]
			}
		}
	}
	return ""
}

// WaitingReason is the reason a container waits, when it is worth telling:
// not while it waits its turn (behind the init containers, or being
// created).
func WaitingReason(c corev1.ContainerStatus) string {
	w := c.State.Waiting
	if w == nil {
		return ""
	}
	switch w.Reason {
	case "", "PodInitializing", "ContainerCreating":
		return ""
	case "ErrImagePull":
		return "ImagePullBackOff"
	}
	return w.Reason
}
