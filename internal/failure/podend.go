package failure

import (
	corev1 "k8s.io/api/core/v1"
)

// PodEndOf reads what classification needs from an ended pod. Containers
// that have not terminated are left out: they did not fail, they were
// stopped by the pod's end. Vanished is left false; only the caller knows
// the pod is gone.
func PodEndOf(pod *corev1.Pod) PodEnd {
	end := PodEnd{
		Phase:          pod.Status.Phase,
		Reason:         pod.Status.Reason,
		Message:        pod.Status.Message,
		InitContainers: containerEnds(pod.Status.InitContainerStatuses),
		Containers:     containerEnds(pod.Status.ContainerStatuses),
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			end.Disruption = &Disruption{Reason: c.Reason, Message: c.Message}
		}
	}
	return end
}

func containerEnds(statuses []corev1.ContainerStatus) []ContainerEnd {
	var out []ContainerEnd
	for _, s := range statuses {
		t := s.State.Terminated
		if t == nil {
			continue
		}
		out = append(out, ContainerEnd{
			Name:       s.Name,
			ExitCode:   t.ExitCode,
			Signal:     t.Signal,
			Reason:     t.Reason,
			Message:    t.Message,
			FinishedAt: t.FinishedAt.Time,
		})
	}
	return out
}
