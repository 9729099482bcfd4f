package plan

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// The phases of a plan add the actions they decide to the Result, which
// is written to and never read to decide anything: the executor carries
// the actions out, in order, once the status is written.

func (r *Result) event(warning bool, reason musterv1.EventReason, msg string) {
	r.Events = append(r.Events, Event{Warning: warning, Reason: reason, Message: msg})
}

// RequeueWithin asks for the plan to be made again after d at the latest.
func (r *Result) RequeueWithin(d time.Duration) {
	if r.RequeueAfter == 0 || d < r.RequeueAfter {
		r.RequeueAfter = d
	}
}

// deletePod asks for a pod instance to be deleted, once, instead of any
// restart in place the plan asked of it: the pod cannot be both.
func (r *Result) deletePod(pod *corev1.Pod, reason string) {
	r.RestartPods = slices.DeleteFunc(r.RestartPods, func(p PodRestart) bool { return p.UID == pod.UID })
	if pod.DeletionTimestamp != nil || r.deletes(pod.UID) {
		return
	}
	r.DeletePods = append(r.DeletePods, PodDeletion{Name: pod.Name, UID: pod.UID, Reason: reason, Force: podFinished(pod)})
}

// deletes is whether the plan already deletes the pod instance uid.
func (r *Result) deletes(uid types.UID) bool {
	return slices.ContainsFunc(r.DeletePods, func(d PodDeletion) bool { return d.UID == uid })
}

// podFinished is whether all of a pod's containers have ended for good:
// there is nothing left for a graceful deletion to stop, so its pod is
// deleted at once (as the pod garbage collector deletes finished pods). A
// replacement then need not wait for the node to confirm the deletion
// before it can take the name, and no late confirmation by name can hit
// the replacement.
func podFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// forceIfOverdue force-deletes a terminating pod once its role's graceful
// deletion timeout has passed since the deletion was asked.
func (r *Result) forceIfOverdue(pod *corev1.Pod, role *musterv1.Role, now time.Time) {
	if role == nil || role.GracefulDeletionTimeoutSeconds == nil || pod.DeletionTimestamp == nil {
		return
	}
	asked := pod.DeletionTimestamp.Time
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		asked = asked.Add(-time.Duration(*g) * time.Second)
	}
	due := asked.Add(time.Duration(*role.GracefulDeletionTimeoutSeconds) * time.Second)
	if left := due.Sub(now); left > 0 {
		r.RequeueWithin(left)
		return
	}
	r.DeletePods = append(r.DeletePods, PodDeletion{Name: pod.Name, UID: pod.UID, Reason: "graceful deletion timeout", Force: true})
	r.event(true, musterv1.EventReasonForceDeleted, fmt.Sprintf("force-deleting %s: still terminating %ds after its deletion was asked (spec.roles[].gracefulDeletionTimeoutSeconds)",
		pod.Name, *role.GracefulDeletionTimeoutSeconds))
}

// dropCreates withdraws the creates of a role's pods.
func (r *Result) dropCreates(role string) {
	out := r.CreatePods[:0]
	for _, pod := range r.CreatePods {
		if pod.Labels[musterv1.LabelRole] != role {
			out = append(out, pod)
		}
	}
	r.CreatePods = out
}
