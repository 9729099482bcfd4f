package observe

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// EndedBeforeDeletion is whether a pod being deleted had ended on its own
// before anyone asked for its deletion (a failed pod the pod garbage
// collector or a user removed): then its end, not the deletion, says how
// its task ended. A pod that ended after the deletion was asked was ended
// by it. Times have a resolution of one second; an end in the same second
// as the request counts as caused by it, so an ambiguous case is never
// charged to the job.
func EndedBeforeDeletion(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp == nil || !Ended(pod) {
		return false
	}
	asked := pod.DeletionTimestamp.Time
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		asked = asked.Add(-time.Duration(*g) * time.Second)
	}
	var last time.Time
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	// A terminal pod with no container end (rejected by its node before
	// any container ran) ended when it was rejected, before any deletion.
	return last.IsZero() || last.Before(asked.Truncate(time.Second))
}

// DeletedByDisruption is the DisruptionTarget condition of a pod that is
// being deleted by whoever set it: a scheduler preempting it, the eviction
// API, the taint manager, the pod garbage collector. The deletion is what
// ends such a pod, whatever its containers do meanwhile, and the condition
// says why. It is nil for any other pod, and for one that had ended on its
// own before its deletion was asked.
func DeletedByDisruption(pod *corev1.Pod) *corev1.PodCondition {
	if pod.DeletionTimestamp == nil || EndedBeforeDeletion(pod) {
		return nil
	}
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// Tracked is whether a pod still carries the operator's tracking
// finalizer.
func Tracked(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, musterv1.FinalizerTracking)
}

// Accountable is whether a tracked pod's end is settled once the status
// planned from it is written: it has ended, or it is being deleted. Its
// finalizer may then go.
func Accountable(pod *corev1.Pod) bool {
	return Tracked(pod) && (Ended(pod) || pod.DeletionTimestamp != nil)
}

// GoneOnRelease is whether a pod leaves the API the moment the operator
// releases it: its deletion was asked without grace (or the kubelet has
// confirmed it), the tracking finalizer is all that holds it, and it had
// not ended before, nor was it disrupted, so its deletion is all there is
// to learn from it. A plan takes such a pod for gone: the plan it makes a
// moment later, once the watch shows the pod gone, is the same, and the
// replacement need not wait for that.
func GoneOnRelease(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 &&
		onlyTracking(pod) && !EndedBeforeDeletion(pod) && DeletedByDisruption(pod) == nil
}

// GoneOnForcedDelete is whether deleting a pod without grace removes it
// from the API at once: nothing but the tracking finalizer, which the same
// plan releases first, holds it.
func GoneOnForcedDelete(pod *corev1.Pod) bool {
	return len(pod.Finalizers) == 0 || onlyTracking(pod)
}

// DeletionStranded is whether a pod's deletion without grace stopped half
// way: the API server deletes such a pod in two steps (it marks the pod
// deleting, then removes it), and a client that goes away between them,
// an operator killed mid-request, leaves it marked, with nothing to hold it
// and nothing left to remove it but its node's kubelet, which may be gone
// too. Asking for the deletion again completes it at once.
func DeletionStranded(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 &&
		len(pod.Finalizers) == 0
}

func onlyTracking(pod *corev1.Pod) bool {
	return len(pod.Finalizers) == 1 && pod.Finalizers[0] == musterv1.FinalizerTracking
}
