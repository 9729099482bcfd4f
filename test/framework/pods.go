package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// GetPod reads a pod, which must exist.
func GetPod(g gomega.Gomega, cs kubernetes.Interface, ns, name string) *corev1.Pod {
	pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return pod
}

// WaitPodPhase waits for a pod to reach a phase and returns it; a failure
// describes the pod (DescribePod).
func WaitPodPhase(g gomega.Gomega, cs kubernetes.Interface, ns, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	var pod *corev1.Pod
	g.Eventually(func(g gomega.Gomega) corev1.PodPhase {
		pod = GetPod(g, cs, ns, name)
		return pod.Status.Phase
	}, timeout, 250*time.Millisecond).Should(gomega.Equal(phase), func() string { return DescribePod(cs, pod) })
	return pod
}

// WaitPodRunning waits until the pod runs and has an IP, and returns it.
func WaitPodRunning(g gomega.Gomega, cs kubernetes.Interface, ns, name string, timeout time.Duration) *corev1.Pod {
	var pod *corev1.Pod
	g.Eventually(func(g gomega.Gomega) {
		pod = GetPod(g, cs, ns, name)
		g.Expect(pod.Status.Phase).To(gomega.Equal(corev1.PodRunning))
		g.Expect(pod.Status.PodIP).NotTo(gomega.BeEmpty())
	}, timeout, 250*time.Millisecond).Should(gomega.Succeed(), func() string { return DescribePod(cs, pod) })
	return pod
}

// PodGone is, for Eventually, whether the pod no longer exists.
func PodGone(cs kubernetes.Interface, ns, name string) func() bool {
	return func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
}

// PodLog reads a container's log through the API server, as kubectl logs
// does.
func PodLog(cs kubernetes.Interface, ns, name, container string) (string, error) {
	data, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).Do(context.Background()).Raw()
	return string(data), err
}

// DescribePod is a failure message: the pod's status and its containers'
// logs.
func DescribePod(cs kubernetes.Interface, pod *corev1.Pod) string {
	if pod == nil {
		return "pod not found"
	}
	var logs strings.Builder
	for _, c := range pod.Spec.Containers {
		log, err := PodLog(cs, pod.Namespace, pod.Name, c.Name)
		if err != nil {
			log = "(no log: " + err.Error() + ")"
		}
		if len(pod.Spec.Containers) == 1 {
			logs.WriteString("log:\n" + log)
		} else {
			fmt.Fprintf(&logs, "log of %s:\n%s\n", c.Name, log)
		}
	}
	return fmt.Sprintf("pod %s/%s on %q: phase %s, reason %q, message %q\nconditions: %v\ncontainers: %v\n%s",
		pod.Namespace, pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.Reason, pod.Status.Message,
		pod.Status.Conditions, pod.Status.ContainerStatuses, logs.String())
}

// DescribePods says, one line a pod, where the namespace's pods (those
// opts selects) are and what keeps them from being ready.
func DescribePods(cs kubernetes.Interface, ns string, opts metav1.ListOptions) string {
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), opts)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		b.WriteString(p.Name + " on " + p.Spec.NodeName + ": " + string(p.Status.Phase))
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				b.WriteString(", " + string(c.Type) + " " + c.Reason + " " + c.Message)
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil {
				b.WriteString(", waiting " + c.State.Waiting.Reason + ": " + c.State.Waiting.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// PodsSummary says on one line where each pod is: name, UID, phase and
// node.
func PodsSummary(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		node := p.Spec.NodeName
		if node == "" {
			node = "unscheduled"
		}
		out = append(out, fmt.Sprintf("%s %.8s %s on %s", p.Name, p.UID, p.Status.Phase, node))
	}
	return strings.Join(out, ", ")
}
