package plan

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

const maxMessageLen = 256

// Pod and container reasons that mean the infrastructure, not the program,
// ended the pod.
var transientPodReasons = map[string]bool{
	"Evicted":                  true,
	"Preempting":               true,
	"NodeLost":                 true,
	"Shutdown":                 true,
	"NodeShutdown":             true,
	"Terminated":               true,
	"UnexpectedAdmissionError": true,
	"PodDeleted":               true,
}

// ExitOf describes how an ended pod ended. The code comes from the failed
// container that finished first: when one process of a job dies, the others
// usually die of it, so the first is the cause.
func ExitOf(pod *corev1.Pod) musterv1.ExitStatus {
	out := musterv1.ExitStatus{Reason: pod.Status.Reason, Message: truncate(pod.Status.Message)}
	var ended []corev1.ContainerStatus
	for _, group := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range group {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
				ended = append(ended, cs)
			}
		}
	}
	sort.SliceStable(ended, func(i, j int) bool {
		return ended[i].State.Terminated.FinishedAt.Before(&ended[j].State.Terminated.FinishedAt)
	})
	if len(ended) > 0 {
		term := ended[0].State.Terminated
		out.Code = term.ExitCode
		out.Container = ended[0].Name
		if term.Reason != "" {
			out.Reason = term.Reason
		}
		if term.Message != "" {
			out.Message = truncate(term.Message)
		}
		out.FinishedAt = new(term.FinishedAt)
	} else if pod.Status.Phase == corev1.PodFailed && out.Reason == "" {
		out.Reason = "PodFailed"
	}
	if out.FinishedAt == nil {
		out.FinishedAt = lastFinish(pod)
	}
	out.Transient = isTransient(pod, out)
	return out
}

// lastFinish is when the last container of pod finished, or nil.
func lastFinish(pod *corev1.Pod) *metav1.Time {
	var last *metav1.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && (last == nil || last.Before(&t.FinishedAt)) {
			last = new(t.FinishedAt)
		}
	}
	return last
}

// isTransient is true when the infrastructure ended the pod: eviction,
// preemption, node loss, or a disruption the API server recorded. Such
// failures are restarted without counting against the backoff limit.
func isTransient(pod *corev1.Pod, exit musterv1.ExitStatus) bool {
	if transientPodReasons[pod.Status.Reason] || transientPodReasons[exit.Reason] {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// VanishedExit describes a task whose pod disappeared without ending: it was
// deleted by someone else or lost with its node.
func VanishedExit(now metav1.Time) musterv1.ExitStatus {
	return musterv1.ExitStatus{
		Reason:     "PodDeleted",
		Message:    "the pod was deleted before it ended",
		Transient:  true,
		FinishedAt: &now,
	}
}

func truncate(s string) string {
	if len(s) <= maxMessageLen {
		return s
	}
	return s[:maxMessageLen-3] + "..."
}
