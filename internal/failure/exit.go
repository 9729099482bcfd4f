package failure

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/text"
)

// MaxMessageLen bounds what status keeps of a message from a pod: at most
// the schema's 1024 for an exit's message, and small because status keeps
// one exit for each task being restarted, which at thousands of tasks must
// still fit one object.
const MaxMessageLen = 256

// MaxReasonLen is the schema's bound on an exit's reason. A pod's and a
// container's reason are set by whoever writes the pod's status (any
// kubelet, a virtual node, a script) and have no bound of their own: one
// copied whole into status would have every status write refused.
const MaxReasonLen = 128

// ExitOf describes how an ended pod ended: the exit code, reason and
// message of the failed container that finished first (when one process of
// a job dies the others usually die of it, so the first is the cause), and
// the classifier's completion of the whole pod.
func ExitOf(pod *corev1.Pod, classifier Classifier) musterv1.ExitStatus {
	out := musterv1.ExitStatus{Reason: text.Head(pod.Status.Reason, MaxReasonLen), Message: text.Head(pod.Status.Message, MaxMessageLen)}
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
			out.Reason = text.Head(term.Reason, MaxReasonLen)
		}
		if term.Message != "" {
			// The message is what the process wrote last (with
			// FallbackToLogsOnError, the tail of its log), and a crash says
			// why in its last line, after the traceback: keep its end.
			out.Message = text.Tail(term.Message, MaxMessageLen)
		}
		out.FinishedAt = new(term.FinishedAt)
	} else if pod.Status.Phase == corev1.PodFailed && out.Reason == "" {
		out.Reason = musterv1.ExitReasonPodFailed
	}
	if out.FinishedAt == nil {
		out.FinishedAt = lastFinish(pod)
	}
	setCompletion(&out, classifier.Classify(firstFailure(pod, out.Container)))
	return out
}

// firstFailure is the pod's end as the classifier sees it: the pod's own
// fields and, of its containers, only the failed one that finished first.
// A native sidecar SIGTERMed after the main container failed must not make
// the failure look transient.
func firstFailure(pod *corev1.Pod, container string) PodEnd {
	end := PodEndOf(pod)
	if container == "" {
		return end
	}
	keep := func(cs []ContainerEnd) []ContainerEnd {
		var out []ContainerEnd
		for _, c := range cs {
			if c.Name == container {
				out = append(out, c)
			}
		}
		return out
	}
	end.InitContainers, end.Containers = keep(end.InitContainers), keep(end.Containers)
	return end
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

// ScaledDownExit describes a task a scale-down of role removes: an outcome
// the operator made on purpose, never retried.
func ScaledDownExit(uid types.UID, role string, now time.Time) musterv1.ExitStatus {
	out := musterv1.ExitStatus{
		PodUID: uid, Reason: musterv1.ExitReasonScaledDown, FinishedAt: new(metav1.NewTime(now)),
		Message: "removed by a scale-down of role " + role,
	}
	setCompletion(&out, mustPredefined(CodeScaleDownDeletion, ""))
	return out
}

// VanishedExit describes a task whose pod disappeared without ending: it was
// deleted by someone else or lost with its node.
func VanishedExit(now time.Time, classifier Classifier) musterv1.ExitStatus {
	out := musterv1.ExitStatus{
		Reason:     musterv1.ExitReasonPodDeleted,
		Message:    "the pod was deleted before it ended",
		FinishedAt: new(metav1.NewTime(now)),
	}
	setCompletion(&out, classifier.Classify(PodEnd{Vanished: true}))
	return out
}

// DisruptedExit describes a task whose pod is being deleted with a
// DisruptionTarget condition (observe.DeletedByDisruption): the condition's
// reason and message, classified as the disruption it is. Its containers
// are not looked at: they end, if they have not yet, because of the
// deletion.
func DisruptedExit(cond *corev1.PodCondition, now time.Time, classifier Classifier) musterv1.ExitStatus {
	out := musterv1.ExitStatus{
		Reason:     text.Head(cond.Reason, MaxReasonLen),
		Message:    text.Head(cond.Message, MaxMessageLen),
		FinishedAt: new(metav1.NewTime(now)),
	}
	setCompletion(&out, classifier.Classify(PodEnd{
		Phase:      corev1.PodFailed,
		Disruption: &Disruption{Reason: cond.Reason, Message: cond.Message},
	}))
	return out
}

// setCompletion records the classifier's completion in an exit.
func setCompletion(out *musterv1.ExitStatus, c Completion) {
	out.CompletionCode = c.Code
	out.Phrase = c.Phrase
	out.Diagnostics = text.Head(c.Diagnostics, MaxMessageLen)
	out.Attributes = nil
	for _, a := range c.Attributes {
		out.Attributes = append(out.Attributes, string(a))
	}
}
