package provider

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Scripts of the pods below. A victim records when it gets SIGTERM, and
// says when it is ready to.
const (
	victimScript = `trap 'echo %s >> /data/order; exit 0' TERM; touch /data/%s-up; sleep 1000 & wait`
	prepScript   = `echo run >> /data/prep-runs`
)

func victim(name string) corev1.Container {
	return sh(name, strings.ReplaceAll(victimScript, "%s", name))
}

// restartingAll reports whether the pod's AllContainersRestarting
// condition is True.
func restartingAll(p *corev1.Pod) bool {
	c, _ := condition(p, corev1.AllContainersRestarting)
	return c.Status == corev1.ConditionTrue
}

// restartDone reports the status that ends a restart of all containers:
// the condition present and False again after having been True.
func restartDone(p *corev1.Pod) bool {
	c, ok := condition(p, corev1.AllContainersRestarting)
	return ok && c.Status == corev1.ConditionFalse
}

// checkRemoved checks that a container removed by a restart of all
// containers is reported as the kubelet does.
func checkRemoved(t *testing.T, p *corev1.Pod, name string, restarts int32) {
	t.Helper()
	s := status(p, name)
	w, last := s.State.Waiting, s.LastTerminationState.Terminated
	if w == nil || w.Reason != reasonRestartingAll || w.Message != messageRemovedForAll {
		t.Errorf("%s: state %s, want Waiting(%s)", name, stateString(s.State), reasonRestartingAll)
	}
	if last == nil || last.Reason != reasonRestartingAll || last.ExitCode != 137 || last.Message != messageRemovedForAll {
		t.Errorf("%s: lastTerminationState %s, want the removal (137)", name, stateString(s.LastTerminationState))
	}
	if s.RestartCount != restarts {
		t.Errorf("%s: restartCount %d, want %d", name, s.RestartCount, restarts)
	}
}

// checkPhases checks that the pod, once Running, never ends and is Pending
// only while reinit says so.
func checkPhases(t *testing.T, h []*corev1.Pod, reinit func(i int, p *corev1.Pod) bool) {
	t.Helper()
	seenRunning := false
	for i, p := range h {
		switch p.Status.Phase {
		case corev1.PodRunning:
			seenRunning = true
			if reinit(i, p) {
				t.Errorf("status %d: Running while an init container runs again (the kubelet reports Pending):\n%s", i, describe(p))
			}
		case corev1.PodPending:
			if seenRunning && !reinit(i, p) {
				t.Errorf("status %d: Pending after Running:\n%s", i, describe(p))
			}
		default:
			t.Fatalf("status %d: the pod ended:\n%s", i, describe(p))
		}
	}
}

// An app container's exit matching its RestartAllContainers rule: the pod
// reports AllContainersRestarting while the others are killed one after
// the other (app containers, then init containers, the trigger last), then
// every removed container at once as waiting, and starts again from its
// first init container, without a crash-loop back-off.
func TestRestartAllOnAppContainerExit(t *testing.T) {
	n := newTestNode(t, withBackoff(10*time.Second))
	pod := testPod("rac-app", corev1.RestartPolicyNever,
		[]corev1.Container{sh("prep", prepScript), withPolicy(victim("side"), always)},
		[]corev1.Container{
			victim("a"),
			withPolicy(sh("trigger", `if [ -e /data/fired ]; then exec sleep 1000; fi
				until [ -e /data/a-up ] && [ -e /data/b-up ] && [ -e /data/side-up ]; do sleep 0.05; done
				touch /data/fired; exit 42`),
				never, rule(restartAll, in, 42)),
			victim("b"),
		})
	n.start(pod)

	iS1, s1 := n.await(0, "AllContainersRestarting", restartingAll)
	c, _ := condition(s1, corev1.AllContainersRestarting)
	if c.Reason != reasonRestartAllRun || c.Message != messageRestartAllRun {
		t.Errorf("condition %+v", c)
	}
	if term := terminated(s1, "trigger"); term == nil || term.ExitCode != 42 || term.Reason != "Error" {
		t.Errorf("the trigger: %s", describe(s1))
	}
	for _, name := range []string{"side", "a", "b"} {
		if !running(s1, name) {
			t.Errorf("%s must still run when the restart begins:\n%s", name, describe(s1))
		}
	}
	if cr, _ := condition(s1, corev1.ContainersReady); cr.Message != "containers with unready status: [trigger]" {
		t.Errorf("ContainersReady %+v", cr)
	}

	iS2, s2 := n.await(iS1, "the containers' removal", restartDone)
	// The kubelet reports nothing while it removes them.
	for i, p := range n.history()[iS1:iS2] {
		for _, name := range []string{"side", "a", "b"} {
			if !running(p, name) {
				t.Fatalf("status %d during the removal:\n%s", iS1+i, describe(p))
			}
		}
	}
	for _, name := range []string{"prep", "side", "a", "trigger", "b"} {
		checkRemoved(t, s2, name, 1)
	}
	if s := status(s2, "a"); s.ContainerID != "" || s.Ready {
		t.Errorf("a container removed while running has a fresh status: %+v", s)
	}
	if s, was := status(s2, "prep"), status(s1, "prep"); s.ContainerID != was.ContainerID || !s.Ready {
		t.Errorf("an ended init container's status keeps its ID and readiness: %+v", s)
	}
	if ini, _ := condition(s2, corev1.PodInitialized); ini.Status != corev1.ConditionTrue || s2.Status.Phase != corev1.PodRunning {
		t.Errorf("after the removal:\n%s", describe(s2))
	}
	if got := n.readData(pod, "order"); got != "a\nb\nside\n" {
		t.Errorf("SIGTERM order %q, want app containers then init containers, in spec order", got)
	}

	_, p := n.await(iS2, "the pod to run again", func(p *corev1.Pod) bool {
		return running(p, "trigger") && running(p, "a") && running(p, "b") && running(p, "side")
	})
	if got := n.readData(pod, "prep-runs"); got != "run\nrun\n" {
		t.Errorf("the init container ran %q, want twice", got)
	}
	for _, name := range []string{"prep", "side", "a", "trigger", "b"} {
		if s := status(p, name); s.RestartCount != 1 || s.LastTerminationState.Terminated == nil ||
			s.LastTerminationState.Terminated.Reason != reasonRestartingAll {
			t.Errorf("%s after the restart: %+v", name, s)
		}
	}
	// A fresh start: no back-off (10 s here) before the trigger runs again.
	done, _ := condition(s2, corev1.AllContainersRestarting)
	if started := status(p, "trigger").State.Running.StartedAt; started.Sub(done.LastTransitionTime.Time) > 5*time.Second {
		t.Errorf("the trigger started %s after the removal", started.Sub(done.LastTransitionTime.Time))
	}
	h := n.history()
	for _, p := range h {
		if waitingReason(p, "trigger") == "CrashLoopBackOff" {
			t.Fatalf("a crash-loop back-off:\n%s", describe(p))
		}
	}
	checkPhases(t, h, func(i int, p *corev1.Pod) bool { return i > iS2 && running(p, "prep") })
}

// (b) A sidecar's exit matching its RestartAllContainers rule, in a pod
// with a network of its own: the pod keeps its UID, address, network
// namespace and emptyDir; its init container runs again (the pod is
// Pending meanwhile, as the kubelet reports it), then the sidecar and the
// app container start again.
func TestRestartAllOnSidecarExit(t *testing.T) {
	n := newTestNode(t, withPodNetwork(t))
	pod := testPod("rac-sidecar", corev1.RestartPolicyNever,
		[]corev1.Container{
			sh("prep", prepScript+`; sleep 0.3`),
			withPolicy(sh("proxy", `readlink /proc/self/ns/net >> /data/netns; if [ -e /data/failed ]; then exec sleep 1000; fi
				while [ ! -e /data/train-up ]; do sleep 0.05; done
				touch /data/failed; echo 'upstream lost' > /dev/termination-log; exit 42`),
				always, rule(restartAll, in, 42)),
		},
		[]corev1.Container{sh("train", `readlink /proc/self/ns/net >> /data/netns; touch /data/train-up; exec sleep 1000`)})
	pod.Spec.HostNetwork = false
	n.start(pod)

	_, up := n.await(0, "the pod to run", func(p *corev1.Pod) bool { return running(p, "train") })
	if c, ok := condition(up, corev1.AllContainersRestarting); !ok || c.Status != corev1.ConditionFalse || c.Reason != "" {
		t.Errorf("a pod with a RestartAllContainers rule reports the condition False: %+v", c)
	}
	iS1, s1 := n.await(0, "AllContainersRestarting", restartingAll)
	if term := terminated(s1, "proxy"); term == nil || term.ExitCode != 42 || term.Message != "upstream lost\n" {
		t.Errorf("the sidecar's exit: %s", describe(s1))
	}
	if cr, _ := condition(s1, corev1.ContainersReady); cr.Status != corev1.ConditionFalse ||
		cr.Message != "containers with unready status: [proxy]" {
		t.Errorf("ContainersReady %+v", cr)
	}
	iS2, s2 := n.await(iS1, "the containers' removal", restartDone)
	for _, name := range []string{"prep", "proxy", "train"} {
		checkRemoved(t, s2, name, 1)
	}
	_, p := n.await(iS2, "the pod to run again", func(p *corev1.Pod) bool {
		return running(p, "train") && status(p, "train").RestartCount == 1
	})
	if s := status(p, "proxy"); s.State.Running == nil || s.RestartCount != 1 {
		t.Errorf("the sidecar after the restart: %s", describe(p))
	}

	h := n.history()
	for _, x := range h {
		if x.UID != pod.UID || (x.Status.PodIP != "" && x.Status.PodIP != up.Status.PodIP) {
			t.Fatalf("the pod's UID or address changed: %s %s, was %s", x.UID, x.Status.PodIP, up.Status.PodIP)
		}
	}
	if up.Status.PodIP == HostIP || up.Status.PodIP == "" {
		t.Errorf("the pod has no address of its own: %q", up.Status.PodIP)
	}
	ns := strings.Fields(n.awaitData(pod, "netns", func(s string) bool { return strings.Count(s, "\n") >= 4 }))
	if len(ns) != 4 || ns[0] != ns[1] || ns[0] != ns[2] || ns[0] != ns[3] {
		t.Errorf("network namespaces seen by the containers across the restart: %q", ns)
	}
	if got := n.readData(pod, "prep-runs"); got != "run\nrun\n" {
		t.Errorf("the init container ran %q, want twice", got)
	}
	pending := false
	checkPhases(t, h, func(i int, p *corev1.Pod) bool {
		again := i > iS2 && running(p, "prep")
		pending = pending || (again && p.Status.Phase == corev1.PodPending)
		return again
	})
	if !pending {
		t.Error("the init container's second run was not seen")
	}
	for _, x := range h[iS1:] {
		if c, _ := condition(x, corev1.PodInitialized); c.Status != corev1.ConditionTrue {
			t.Fatalf("an initialized pod stays Initialized:\n%s", describe(x))
		}
	}
}

// A regular init container's exit matching its RestartAllContainers rule,
// before the pod was initialized: the sidecar started before it is removed
// too, the app container that never ran keeps waiting, and initialization
// starts over.
func TestRestartAllOnInitContainerExit(t *testing.T) {
	n := newTestNode(t)
	pod := testPod("rac-init", corev1.RestartPolicyNever,
		[]corev1.Container{
			withPolicy(victim("side"), always),
			withPolicy(sh("gate", `if [ -e /data/fired ]; then exit 0; fi; touch /data/fired; exit 42`), never, rule(restartAll, in, 42)),
		},
		[]corev1.Container{sh("app", `exec sleep 1000`)})
	n.start(pod)

	iS1, s1 := n.await(0, "AllContainersRestarting", restartingAll)
	if term := terminated(s1, "gate"); term == nil || term.ExitCode != 42 || !running(s1, "side") {
		t.Errorf("when the restart begins:\n%s", describe(s1))
	}
	iS2, s2 := n.await(iS1, "the containers' removal", restartDone)
	checkRemoved(t, s2, "side", 1)
	checkRemoved(t, s2, "gate", 1)
	if s := status(s2, "app"); waitingReason(s2, "app") != "PodInitializing" || s.RestartCount != 0 || s.LastTerminationState.Terminated != nil {
		t.Errorf("the app container that never ran: %+v", s)
	}
	_, p := n.await(iS2, "the app container to run", func(p *corev1.Pod) bool { return running(p, "app") })
	if s := status(p, "gate"); s.RestartCount != 1 || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("gate after the restart:\n%s", describe(p))
	}
	if s := status(p, "app"); s.RestartCount != 0 {
		t.Errorf("app: %+v", s)
	}
	for i, x := range n.history() {
		if x.Status.Phase != corev1.PodPending && i <= iS2 {
			t.Fatalf("status %d: a pod not yet initialized is Pending:\n%s", i, describe(x))
		}
	}
}
