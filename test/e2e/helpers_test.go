package e2e

import (
	"context"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// image is never pulled: the process node runs the host's programs.
const image = "docker.io/library/python:3.11"

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

func terminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == "main" {
			return s.State.Terminated
		}
	}
	return nil
}
