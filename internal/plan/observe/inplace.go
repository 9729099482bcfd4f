package observe

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// RestartingAllContainers is the reason the kubelet gives the last end of
// a container it removed to restart every container of its pod.
const RestartingAllContainers = "RestartingAllContainers"

// InPlaceRun is where a pod that can restart in place stands between the
// restarts the operator asked of it and those its node has done.
type InPlaceRun int

const (
	// NotInPlace: the pod cannot restart in place: it was not made to, or
	// the API server dropped its restart rules (a cluster without the
	// feature).
	NotInPlace InPlaceRun = iota
	// RunCurrent: every restart asked is done; the containers run what the
	// pod's labels say.
	RunCurrent
	// RunRestarting: a restart was asked or is under way and not done:
	// what the containers show belongs to the run before.
	RunRestarting
)

// InPlaceOf is where pod stands, from the restarts asked of it (its
// muster.dev/in-place-restarts annotation) and those its node did
// (doneRestarts).
func InPlaceOf(pod *corev1.Pod) InPlaceRun {
	asked, ok := AskedRestarts(pod)
	if !ok || !hasWatcherRule(pod) {
		return NotInPlace
	}
	if restartingAll(pod) {
		return RunRestarting
	}
	if int(doneRestarts(pod)) < asked {
		return RunRestarting
	}
	return RunCurrent
}

// NextInPlaceRestart is the value of the annotation that asks pod for one
// more restart than it did or was asked, whichever is more. Asked again
// from the same view of the pod, it is the same value: a plan that repeats
// an ask that already landed asks nothing more.
func NextInPlaceRestart(pod *corev1.Pod) int32 {
	asked, _ := AskedRestarts(pod)
	if done := doneRestarts(pod); int(done) >= asked {
		return done + 1
	}
	// The last ask is not done yet: the new labels ride on it.
	return int32(asked)
}

// InPlaceFailure is, for a pod that runs its current run, how that run
// failed, as the pod would show it had it ended: phase Failed, with each
// training container that failed since the run began back in its
// terminated state. A container that fails with a code its restart rule
// retries is restarted alone, keeping its exit in its last state, until
// the operator restarts the pod. Nil when nothing failed.
//
// Since the run began: after the watcher of this run started. The kubelet
// gives every container it removes for a restart of all containers the
// last end RestartingAllContainers; one that was waiting out a crash-loop
// back-off keeps its older end, which ends before this run's watcher
// started. Times are whole seconds, and such an older end often falls in
// the second the watcher started (the operator asks for the restart a
// moment after the failure): an end in that second is taken for the run
// before's. A failure of this run that fast is taken at the container's
// next exit, after the kubelet's back-off; counting the run before's
// failure twice would charge a restart that never happened.
func InPlaceFailure(pod *corev1.Pod) *corev1.Pod {
	if InPlaceOf(pod) != RunCurrent {
		return nil
	}
	w := WatcherStatus(pod)
	if w == nil || w.State.Running == nil {
		return nil
	}
	began := w.State.Running.StartedAt
	var failed []int
	for i, cs := range pod.Status.ContainerStatuses {
		t := cs.LastTerminationState.Terminated
		if cs.State.Terminated != nil || t == nil || t.ExitCode == 0 || t.Reason == RestartingAllContainers || !began.Before(&t.FinishedAt) {
			continue
		}
		failed = append(failed, i)
	}
	if len(failed) == 0 {
		return nil
	}
	out := pod.DeepCopy()
	out.Status.Phase = corev1.PodFailed
	for _, i := range failed {
		cs := &out.Status.ContainerStatuses[i]
		cs.State = corev1.ContainerState{Terminated: cs.LastTerminationState.Terminated}
	}
	return out
}

// NodeRestarts is how many times, over pod's life, its node restarted a
// training container alone, as that container's restart rule has it do on
// any exit that is not final: at once, and again after each back-off,
// whether the operator looks or not, keeping only the last end. Each
// restart of all containers adds one to every container's restart count
// and to the watcher's, so what a container counts beyond the watcher are
// the restarts it made alone (a watcher restarted alone hides one of
// them: docs/failures.md). Known only while the pod runs what it was
// asked (RunCurrent, or ended there): false while a restart is under way,
// when the counts are caught between runs.
func NodeRestarts(pod *corev1.Pod) (int32, bool) {
	if InPlaceOf(pod) != RunCurrent {
		return 0, false
	}
	all := doneRestarts(pod)
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += max(0, cs.RestartCount-all)
	}
	return n, true
}

// InPlaceUnreadable is whether pod was made to restart in place (its
// watcher keeps its restart rule) but its muster.dev/in-place-restarts
// annotation, which says how many restarts were asked, is gone or not a
// number: someone changed it, where Muster's admission policy is missing.
// Its restarts can no longer be told apart, nor asked.
func InPlaceUnreadable(pod *corev1.Pod) bool {
	_, ok := AskedRestarts(pod)
	return !ok && hasWatcherRule(pod)
}

// RestartedInPlace is whether the operator has asked pod to restart in
// place at least once.
func RestartedInPlace(pod *corev1.Pod) bool {
	n, ok := AskedRestarts(pod)
	return ok && n > 0
}

// AskedRestarts is how many times the operator has asked pod to restart in
// place (its muster.dev/in-place-restarts annotation), and false for a pod
// made not to.
func AskedRestarts(pod *corev1.Pod) (int, bool) {
	v, ok := pod.Annotations[musterv1.AnnotationInPlaceRestarts]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 0
}

// doneRestarts is how many restarts of all containers pod's node did:
// each restarts the restart watcher once, and only the operator asks for
// them (objects.ApplyInPlace), so the watcher's restart count is the
// number done. A watcher that exited on its own and was restarted alone
// counts one more, which the next ask takes up (NextInPlaceRestart); one
// restarted so with an ask pending acts on it at once, as it compares
// with the value it last acted on (restartwatch.Start).
func doneRestarts(pod *corev1.Pod) int32 {
	if w := WatcherStatus(pod); w != nil {
		return w.RestartCount
	}
	// Not started yet: the first run, or the pod is still being placed.
	return 0
}

// hasWatcherRule is whether the pod's watcher kept its restart rule: an API
// server without the feature drops the rules, and the watcher's exit would
// then only restart itself.
func hasWatcherRule(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name != objects.RestartWatcherName {
			continue
		}
		for _, r := range c.RestartPolicyRules {
			if r.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
				return true
			}
		}
	}
	return false
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

// WatcherStatus is the status of pod's restart watcher
// (objects.RestartWatcherName), nil before the node reports it. It points
// into the pod's InitContainerStatuses: a change to it changes the pod.
func WatcherStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == objects.RestartWatcherName {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}
