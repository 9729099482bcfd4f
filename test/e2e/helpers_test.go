package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// image is never pulled: the process node runs the host's programs.
const image = "docker.io/library/python:3.11"

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T, g gomega.Gomega) string {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("e2e-%s-%04x", dnsLabel(strings.TrimPrefix(t.Name(), "Test"), 30), rand.IntN(1<<16))
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// Pods are rejected until the service-account controller has made the
	// namespace's default ServiceAccount.
	g.Eventually(func() error {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	}, 30*time.Second, 200*time.Millisecond).Should(gomega.Succeed())
	return name
}

// dnsLabel lower-cases s and keeps what a DNS label allows.
func dnsLabel(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if b.Len() < n && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pythonPod is a pod whose one container runs a python3 script.
func pythonPod(ns, name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   image,
				Command: []string{"python3", "-u", "-c", script},
			}},
		},
	}
}

func createPod(g gomega.Gomega, pod *corev1.Pod) *corev1.Pod {
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return created
}

func getPod(g gomega.Gomega, ns, name string) *corev1.Pod {
	pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return pod
}

// waitForPhase waits for a pod to reach a phase and returns it.
func waitForPhase(g gomega.Gomega, ns, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	var pod *corev1.Pod
	g.Eventually(func(g gomega.Gomega) corev1.PodPhase {
		pod = getPod(g, ns, name)
		return pod.Status.Phase
	}, timeout, 250*time.Millisecond).Should(gomega.Equal(phase), func() string { return describe(pod) })
	return pod
}

// waitForRunning waits until the pod runs and has an IP.
func waitForRunning(g gomega.Gomega, ns, name string) *corev1.Pod {
	var pod *corev1.Pod
	g.Eventually(func(g gomega.Gomega) {
		pod = getPod(g, ns, name)
		g.Expect(pod.Status.Phase).To(gomega.Equal(corev1.PodRunning))
		g.Expect(pod.Status.PodIP).NotTo(gomega.BeEmpty())
	}, time.Minute, 250*time.Millisecond).Should(gomega.Succeed(), func() string { return describe(pod) })
	return pod
}

// logs reads a container's log through the API server, as kubectl logs does.
func logs(ns, name string) (string, error) {
	data, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: "main"}).Do(context.Background()).Raw()
	return string(data), err
}

func terminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == "main" {
			return s.State.Terminated
		}
	}
	return nil
}

func podGone(ns, name string) func() bool {
	return func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
}

// describe is a failure message: the pod's status and its log.
func describe(pod *corev1.Pod) string {
	if pod == nil {
		return "pod not found"
	}
	log, err := logs(pod.Namespace, pod.Name)
	if err != nil {
		log = "(no log: " + err.Error() + ")"
	}
	return fmt.Sprintf("pod %s/%s on %q: phase %s, reason %q, message %q\nconditions: %v\ncontainers: %v\nlog:\n%s",
		pod.Namespace, pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.Reason, pod.Status.Message,
		pod.Status.Conditions, pod.Status.ContainerStatuses, log)
}
