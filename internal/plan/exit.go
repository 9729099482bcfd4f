package plan

import (
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/failure"
)

// maxMessageLen bounds what status keeps of a message from a pod: at most
// the schema's 1024 for an exit's message, and small because status keeps
// one exit for each task being restarted, which at thousands of tasks must
// still fit one object.
const maxMessageLen = 256

// ExitOf describes how an ended pod ended: the exit code, reason and
// message of the failed container that finished first (when one process of
// a job dies the others usually die of it, so the first is the cause), and
// the classifier's verdict on the whole pod.
func ExitOf(pod *corev1.Pod, classifier failure.Classifier) musterv1.ExitStatus {
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
			out.Message = lastPart(term.Message)
		}
		out.FinishedAt = new(term.FinishedAt)
	} else if pod.Status.Phase == corev1.PodFailed && out.Reason == "" {
		out.Reason = "PodFailed"
	}
	if out.FinishedAt == nil {
		out.FinishedAt = lastFinish(pod)
	}
	classify(&out, classifier.Classify(firstFailure(pod, out.Container)))
	return out
}

// firstFailure is the pod's end as the classifier sees it: the pod's own
// fields and, of its containers, only the failed one that finished first.
// A native sidecar SIGTERMed after the main container failed must not make
// the failure look transient.
func firstFailure(pod *corev1.Pod, container string) failure.PodEnd {
	end := failure.PodEndOf(pod)
	if container == "" {
		return end
	}
	keep := func(cs []failure.ContainerEnd) []failure.ContainerEnd {
		var out []failure.ContainerEnd
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

// VanishedExit describes a task whose pod disappeared without ending: it was
// deleted by someone else or lost with its node.
func VanishedExit(now time.Time, classifier failure.Classifier) musterv1.ExitStatus {
	out := musterv1.ExitStatus{
		Reason:     "PodDeleted",
		Message:    "the pod was deleted before it ended",
		FinishedAt: new(metav1.NewTime(now)),
	}
	classify(&out, classifier.Classify(failure.PodEnd{Vanished: true}))
	return out
}

// DisruptedExit describes a task whose pod is being deleted with a
// DisruptionTarget condition (observe.DeletedByDisruption): the condition's
// reason and message, classified as the disruption it is. Its containers
// are not looked at: they end, if they have not yet, because of the
// deletion.
func DisruptedExit(cond *corev1.PodCondition, now time.Time, classifier failure.Classifier) musterv1.ExitStatus {
	out := musterv1.ExitStatus{
		Reason:     cond.Reason,
		Message:    truncate(cond.Message),
		FinishedAt: new(metav1.NewTime(now)),
	}
	classify(&out, classifier.Classify(failure.PodEnd{
		Phase:      corev1.PodFailed,
		Disruption: &failure.Disruption{Reason: cond.Reason, Message: cond.Message},
	}))
	return out
}

func classify(out *musterv1.ExitStatus, c failure.Completion) {
	out.CompletionCode = c.Code
	out.Phrase = c.Phrase
	out.Diagnostics = truncate(c.Diagnostics)
	out.Attributes = nil
	for _, a := range c.Attributes {
		out.Attributes = append(out.Attributes, string(a))
	}
}

// maxCompletionMessageLen bounds status.completion.message, which may
// carry every field error of an invalid spec.
const maxCompletionMessageLen = 1024

// bounded is c with its message cut to what status allows.
func bounded(c musterv1.CompletionStatus) musterv1.CompletionStatus {
	c.Message = truncateTo(c.Message, maxCompletionMessageLen)
	return c
}

// truncate cuts a message from a pod to what status keeps of it.
func truncate(s string) string { return truncateTo(s, maxMessageLen) }

// lastPart cuts a container's termination message to what status keeps of
// it, keeping its end: the message is what the process wrote last (with
// FallbackToLogsOnError, the tail of its log), and a crash says why in its
// last line, after the traceback (Python's "AttributeError: ...").
func lastPart(s string) string { return lastPartTo(s, maxMessageLen) }

// ellipsis marks the start of a message kept from its end.
const ellipsis = "…"

// lastPartTo keeps the last bytes of s that fit n with the ellipsis before
// them, starting on a whole character. Trailing blank space (a log's last
// newline) is dropped first so that it takes no room from the text.
func lastPartTo(s string, n int) string {
	s = strings.TrimRightFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(s) <= n {
		return s
	}
	start := len(s) - (n - len(ellipsis))
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return ellipsis + s[start:]
}

// truncateTo cuts s to n bytes, marking the cut.
func truncateTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
