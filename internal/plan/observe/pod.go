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
