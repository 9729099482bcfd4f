package provider

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A termination message is reported for init containers as for app
// containers: from the terminationMessagePath file, and from the log's end
// with FallbackToLogsOnError.
func TestInitContainerTerminationMessage(t *testing.T) {
	n := newTestNode(t)
	fallback := sh("fallback", `echo 'cannot reach the store'; exit 3`)
	fallback.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	pod := testPod("init-message", corev1.RestartPolicyNever,
		[]corev1.Container{sh("msg", `echo 'init done: 3 files' > /dev/termination-log`), fallback},
		[]corev1.Container{sh("app", `exit 0`)})
	n.start(pod)

	_, p := n.await(0, "the pod to fail", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if term := terminated(p, "msg"); term == nil || term.Message != "init done: 3 files\n" || term.Reason != "Completed" {
		t.Errorf("msg: %s", describe(p))
	}
	if term := terminated(p, "fallback"); term == nil || term.ExitCode != 3 || !strings.Contains(term.Message, "cannot reach the store") {
		t.Errorf("fallback: %s", describe(p))
	}
}
