package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

func terminated(name string, code int32, reason string, at time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(at),
	}}}
}

func TestExitOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		status corev1.PodStatus
		want   musterv1.ExitStatus
	}{
		"the failed container that finished first is the cause": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				terminated("sidecar", 143, "Error", t0.Add(time.Second)),
				terminated("main", 1, "Error", t0),
			}},
			want: musterv1.ExitStatus{Code: 1, Reason: "Error", Container: "main", FinishedAt: new(metav1.NewTime(t0))},
		},
		"a failed init container counts": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{
				terminated("init", 127, "Error", t0),
			}},
			want: musterv1.ExitStatus{Code: 127, Reason: "Error", Container: "init", FinishedAt: new(metav1.NewTime(t0))},
		},
		"eviction is transient": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"},
			want:   musterv1.ExitStatus{Reason: "Evicted", Message: "low on memory", Transient: true},
		},
		"a disruption target condition is transient": {
			status: corev1.PodStatus{Phase: corev1.PodFailed,
				Conditions:        []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{terminated("main", 137, "Error", t0)}},
			want: musterv1.ExitStatus{Code: 137, Reason: "Error", Container: "main", Transient: true, FinishedAt: new(metav1.NewTime(t0))},
		},
		"OOMKilled is not transient": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				terminated("main", 137, "OOMKilled", t0)}},
			want: musterv1.ExitStatus{Code: 137, Reason: "OOMKilled", Container: "main", FinishedAt: new(metav1.NewTime(t0))},
		},
		"success": {
			status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
				terminated("main", 0, "Completed", t0)}},
			want: musterv1.ExitStatus{FinishedAt: new(metav1.NewTime(t0))},
		},
		"failed with no container status": {
			status: corev1.PodStatus{Phase: corev1.PodFailed},
			want:   musterv1.ExitStatus{Reason: "PodFailed"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ExitOf(&corev1.Pod{Status: tc.status})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ExitOf (-want +got):\n%s", diff)
			}
		})
	}
}
