package provider

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	restart    = corev1.ContainerRestartRuleActionRestart
	restartAll = corev1.ContainerRestartRuleActionRestartAllContainers
	in         = corev1.ContainerRestartRuleOnExitCodesOpIn
	notIn      = corev1.ContainerRestartRuleOnExitCodesOpNotIn
	always     = corev1.ContainerRestartPolicyAlways
	onFailure  = corev1.ContainerRestartPolicyOnFailure
	never      = corev1.ContainerRestartPolicyNever
)

// The decision table of kubelet's ContainerShouldRestart, without
// processes.
func TestContainerShouldRestart(t *testing.T) {
	c := func(p *corev1.ContainerRestartPolicy, rules ...corev1.ContainerRestartRule) *corev1.Container {
		return &corev1.Container{Name: "c", RestartPolicy: p, RestartPolicyRules: rules}
	}
	pol := func(p corev1.ContainerRestartPolicy) *corev1.ContainerRestartPolicy { return &p }
	cases := []struct {
		name string
		c    *corev1.Container
		pod  corev1.RestartPolicy
		code int32
		want bool
	}{
		{"no own policy: the pod's Never", c(nil), corev1.RestartPolicyNever, 1, false},
		{"no own policy: the pod's OnFailure", c(nil), corev1.RestartPolicyOnFailure, 1, true},
		{"own Always over the pod's Never", c(pol(always)), corev1.RestartPolicyNever, 0, true},
		{"own Never over the pod's Always", c(pol(never)), corev1.RestartPolicyAlways, 1, false},
		{"own OnFailure, success", c(pol(onFailure)), corev1.RestartPolicyAlways, 0, false},
		{"In matches", c(pol(never), rule(restart, in, 42)), corev1.RestartPolicyNever, 42, true},
		{"In does not match: own policy", c(pol(never), rule(restart, in, 42)), corev1.RestartPolicyAlways, 1, false},
		{"NotIn matches", c(pol(never), rule(restart, notIn, 0)), corev1.RestartPolicyNever, 3, true},
		{"NotIn does not match", c(pol(never), rule(restart, notIn, 0, 3)), corev1.RestartPolicyNever, 3, false},
		{"RestartAllContainers restarts it too", c(pol(never), rule(restartAll, in, 42)), corev1.RestartPolicyNever, 42, true},
		{"no match: own OnFailure", c(pol(onFailure), rule(restart, in, 42)), corev1.RestartPolicyNever, 7, true},
	}
	for _, tc := range cases {
		if got := containerShouldRestart(tc.c, tc.pod, tc.code); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	first := c(pol(never), rule(restart, in, 3), rule(restartAll, in, 3))
	if r, _ := matchingRule(first, 3); r.Action != restart || restartsAll(first, 3) {
		t.Errorf("the first matching rule must win: %v", r.Action)
	}
	if !restartsAll(c(pol(never), rule(restart, in, 1), rule(restartAll, notIn, 1)), 3) {
		t.Error("a later rule applies when the earlier ones do not match")
	}
}

// (a) A Restart rule restarts the container alone, with the crash-loop
// back-off of any restart (none before the first, as the kubelet's), and
// its last state keeps the real exit: code, reason, termination message,
// start and finish times.
func TestRestartRuleRestartsTheContainerAlone(t *testing.T) {
	n := newTestNode(t)
	pod := testPod("rule-restart", corev1.RestartPolicyNever, nil, []corev1.Container{
		withPolicy(sh("worker", `n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n
			if [ $n -lt 3 ]; then echo "attempt $n failed" > /dev/termination-log; exit 42; fi`),
			never, rule(restart, in, 42)),
		sh("other", `sleep 3`),
	})
	n.start(pod)

	i, first := n.await(0, "the first exit", func(p *corev1.Pod) bool { return terminated(p, "worker") != nil })
	exit1 := *terminated(first, "worker")
	if exit1.ExitCode != 42 || exit1.Reason != "Error" || exit1.Message != "attempt 1 failed\n" {
		t.Fatalf("first exit: %+v", exit1)
	}
	// The first restart is at once, as the kubelet's: no back-off yet.
	i, p := n.await(i, "the second attempt", func(p *corev1.Pod) bool {
		return running(p, "worker") && status(p, "worker").RestartCount == 1
	})
	last := status(p, "worker").LastTerminationState.Terminated
	if last == nil || last.ExitCode != 42 || last.Reason != "Error" || last.Message != exit1.Message ||
		!last.StartedAt.Equal(&exit1.StartedAt) || !last.FinishedAt.Equal(&exit1.FinishedAt) {
		t.Errorf("lastTerminationState %+v, want the exit %+v", last, exit1)
	}
	for _, h := range n.history() {
		if waitingReason(h, "worker") == "CrashLoopBackOff" {
			t.Fatalf("a back-off before the first restart:\n%s", describe(h))
		}
	}
	_, p = n.await(i, "the first back-off", func(p *corev1.Pod) bool { return waitingReason(p, "worker") == "CrashLoopBackOff" })
	s := status(p, "worker")
	if !strings.Contains(s.State.Waiting.Message, "back-off 300ms") || s.RestartCount != 1 {
		t.Errorf("first back-off: %+v, restarts %d", s.State.Waiting, s.RestartCount)
	}
	if last := s.LastTerminationState.Terminated; last == nil || last.ExitCode != 42 || last.Message != "attempt 2 failed\n" {
		t.Errorf("lastTerminationState in the back-off %+v, want the second exit", last)
	}
	_, p = n.await(0, "the pod's end", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if s := status(p, "worker"); s.RestartCount != 2 || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("worker at the end: %s", describe(p))
	}
	for _, h := range n.history() {
		if status(h, "other").RestartCount != 0 {
			t.Fatalf("the other container restarted:\n%s", describe(h))
		}
		if _, ok := condition(h, corev1.AllContainersRestarting); ok {
			t.Fatalf("a pod without RestartAllContainers rules has no AllContainersRestarting condition:\n%s", describe(h))
		}
	}
}

// A container's own restartPolicy overrides the pod's, both ways.
func TestContainerRestartPolicyOverridesThePods(t *testing.T) {
	n := newTestNode(t)
	once := `if [ -e /data/ran ]; then exit 0; fi; touch /data/ran; exit 1`
	retried := testPod("own-onfailure", corev1.RestartPolicyNever, nil,
		[]corev1.Container{withPolicy(sh("c", once), onFailure)})
	kept := testPod("own-never", corev1.RestartPolicyAlways, nil,
		[]corev1.Container{withPolicy(sh("c", `exit 3`), never)})
	n.start(retried)
	n.start(kept)

	_, p := n.await(0, "own OnFailure under the pod's Never to restart", func(p *corev1.Pod) bool {
		return p.Name == retried.Name && p.Status.Phase == corev1.PodSucceeded
	})
	if s := status(p, "c"); s.RestartCount != 1 || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("own OnFailure: %s", describe(p))
	}
	_, p = n.await(0, "own Never under the pod's Always to stop", func(p *corev1.Pod) bool {
		return p.Name == kept.Name && p.Status.Phase == corev1.PodFailed
	})
	if s := status(p, "c"); s.RestartCount != 0 || s.State.Terminated == nil || s.State.Terminated.ExitCode != 3 {
		t.Errorf("own Never: %s", describe(p))
	}
}

// Rules are checked in order and the first match wins: here a Restart
// rule listed before a RestartAllContainers rule for the same code.
func TestRestartRulesFirstMatchWins(t *testing.T) {
	n := newTestNode(t)
	pod := testPod("first-match", corev1.RestartPolicyNever, nil, []corev1.Container{
		withPolicy(sh("c", `if [ -e /data/ran ]; then exec sleep 1000; fi; touch /data/ran; exit 3`),
			never, rule(restart, in, 3), rule(restartAll, in, 3)),
		sh("other", `exec sleep 1000`),
	})
	n.start(pod)
	_, p := n.await(0, "c to run again", func(p *corev1.Pod) bool {
		return running(p, "c") && status(p, "c").RestartCount == 1
	})
	time.Sleep(500 * time.Millisecond) // a restart of all would have begun
	for _, h := range append(n.history(), p) {
		if c, _ := condition(h, corev1.AllContainersRestarting); c.Status == corev1.ConditionTrue ||
			status(h, "other").RestartCount != 0 || waitingReason(h, "other") == reasonRestartingAll {
			t.Fatalf("the later RestartAllContainers rule applied:\n%s", describe(h))
		}
	}
}

// NotIn matches every code but those listed; a code no rule matches falls
// back to the container's own policy (here Never).
func TestRestartRuleNotIn(t *testing.T) {
	n := newTestNode(t)
	pod := testPod("not-in", corev1.RestartPolicyAlways, nil, []corev1.Container{
		withPolicy(sh("c", `if [ -e /data/ran ]; then exit 1; fi; touch /data/ran; exit 5`),
			never, rule(restart, notIn, 0, 1)),
	})
	n.start(pod)
	_, p := n.await(0, "the pod to fail", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	s := status(p, "c")
	if s.RestartCount != 1 || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 5 ||
		s.State.Terminated == nil || s.State.Terminated.ExitCode != 1 {
		t.Errorf("want exit 5 restarted (NotIn [0 1]) and exit 1 final (own Never over the pod's Always):\n%s", describe(p))
	}
}

// When no rule matches, the container's own policy decides, not the pod's.
func TestRestartRuleNoMatchUsesTheContainersPolicy(t *testing.T) {
	n := newTestNode(t)
	pod := testPod("no-match", corev1.RestartPolicyNever, nil, []corev1.Container{
		withPolicy(sh("c", `if [ -e /data/ran ]; then exit 0; fi; touch /data/ran; exit 7`),
			onFailure, rule(restart, in, 42)),
	})
	n.start(pod)
	_, p := n.await(0, "the pod to end", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if s := status(p, "c"); p.Status.Phase != corev1.PodSucceeded || s.RestartCount != 1 ||
		s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 7 {
		t.Errorf("exit 7 matches no rule: own OnFailure restarts it, not the pod's Never:\n%s", describe(p))
	}
}

// A regular init container follows its rules too: a matching failure runs
// it again and the pod goes on; a failure no rule matches (own policy
// Never) fails the pod.
func TestRestartRuleOnInitContainer(t *testing.T) {
	n := newTestNode(t)
	flaky := `if [ -e /data/ran ]; then exit 0; fi; touch /data/ran; exit 7`
	retried := testPod("init-rule", corev1.RestartPolicyNever,
		[]corev1.Container{withPolicy(sh("setup", flaky), never, rule(restart, in, 7))},
		[]corev1.Container{sh("app", `exit 0`)})
	failed := testPod("init-no-match", corev1.RestartPolicyAlways,
		[]corev1.Container{withPolicy(sh("setup", `exit 8`), never, rule(restart, in, 7))},
		[]corev1.Container{sh("app", `exit 0`)})
	n.start(retried)
	n.start(failed)

	_, p := n.await(0, "the init container to be retried", func(p *corev1.Pod) bool {
		return p.Name == retried.Name && p.Status.Phase == corev1.PodSucceeded
	})
	if s := status(p, "setup"); s.RestartCount != 1 || s.LastTerminationState.Terminated == nil ||
		s.LastTerminationState.Terminated.ExitCode != 7 || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("init container: %s", describe(p))
	}
	_, p = n.await(0, "the unmatched init failure to fail the pod", func(p *corev1.Pod) bool {
		return p.Name == failed.Name && p.Status.Phase == corev1.PodFailed
	})
	if s := status(p, "setup"); s.RestartCount != 0 || status(p, "app").State.Waiting == nil {
		t.Errorf("init container without a matching rule: %s", describe(p))
	}
}
