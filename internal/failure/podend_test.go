package failure

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodEndOf(t *testing.T) {
	terminated := func(name string, code, signal int32, reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Signal: signal, Reason: reason, Message: msg, FinishedAt: metav1.NewTime(t0),
		}}}
	}
	running := corev1.ContainerStatus{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	cases := map[string]struct {
		status corev1.PodStatus
		want   PodEnd
	}{
		"containers that did not terminate are left out": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low memory",
				InitContainerStatuses: []corev1.ContainerStatus{terminated("init", 0, 0, "Completed", "")},
				ContainerStatuses:     []corev1.ContainerStatus{terminated("main", 137, 9, "OOMKilled", "oom"), running},
			},
			want: PodEnd{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low memory",
				InitContainers: []ContainerEnd{{Name: "init", Reason: "Completed", FinishedAt: t0}},
				Containers:     []ContainerEnd{{Name: "main", ExitCode: 137, Signal: 9, Reason: "OOMKilled", Message: "oom", FinishedAt: t0}},
			},
		},
		"a true DisruptionTarget condition": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse},
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler", Message: "preempted"},
			}},
			want: PodEnd{Phase: corev1.PodFailed, Disruption: &Disruption{Reason: "PreemptionByScheduler", Message: "preempted"}},
		},
		"a false DisruptionTarget condition": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, Reason: "PreemptionByScheduler"},
			}},
			want: PodEnd{Phase: corev1.PodFailed},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PodEndOf(&corev1.Pod{Status: tc.status})); diff != "" {
				t.Errorf("PodEndOf (-want +got):\n%s", diff)
			}
		})
	}
}
