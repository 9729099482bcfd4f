package observe

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func TestEndedBeforeDeletion(t *testing.T) {
	at := func(sec int) *metav1.Time { return new(metav1.NewTime(time.Unix(int64(1000+sec), 0))) }
	ended := func(phase corev1.PodPhase, finished int) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: *at(finished)}},
		}}}}
	}
	deleted := func(p *corev1.Pod, sec int, grace int64) *corev1.Pod {
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = at(sec), &grace
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"not deleted":                        {ended(corev1.PodFailed, 0), false},
		"deleted while running":              {deleted(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, 40, 30), false},
		"failed, deleted a minute later":     {deleted(ended(corev1.PodFailed, 0), 60, 0), true},
		"succeeded, deleted later":           {deleted(ended(corev1.PodSucceeded, 0), 60, 30), true},
		"ended by its graceful deletion":     {deleted(ended(corev1.PodFailed, 12), 40, 30), false},
		"ended in the second it was asked":   {deleted(ended(corev1.PodFailed, 10), 10, 0), false},
		"ended the second before":            {deleted(ended(corev1.PodFailed, 9), 10, 0), true},
		"rejected by its node, no container": {deleted(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu"}}, 10, 0), true},
	}
	for name, tc := range cases {
		if got := EndedBeforeDeletion(tc.pod); got != tc.want {
			t.Errorf("%s: EndedBeforeDeletion = %t, want %t", name, got, tc.want)
		}
	}
}

func TestAccountable(t *testing.T) {
	tracked := func(phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"other", musterv1.FinalizerTracking}}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = new(metav1.Now())
		}
		return p
	}
	untracked := tracked(corev1.PodFailed, true)
	untracked.Finalizers = []string{"other"}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"running":               {tracked(corev1.PodRunning, false), false},
		"pending":               {tracked(corev1.PodPending, false), false},
		"failed":                {tracked(corev1.PodFailed, false), true},
		"succeeded":             {tracked(corev1.PodSucceeded, false), true},
		"deleted, running":      {tracked(corev1.PodRunning, true), true},
		"without our finalizer": {untracked, false},
	}
	for name, tc := range cases {
		if got := Accountable(tc.pod); got != tc.want {
			t.Errorf("%s: Accountable = %t, want %t", name, got, tc.want)
		}
	}
}

func TestDeletedByDisruption(t *testing.T) {
	disrupted := func(status corev1.ConditionStatus) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "Evict"},
			{Type: corev1.DisruptionTarget, Status: status, Reason: corev1.PodReasonPreemptionByScheduler, Message: "volcano: preempting to accommodate a higher priority pod"},
		}}
	}
	deleting := func(st corev1.PodStatus) *corev1.Pod {
		p := &corev1.Pod{Status: st}
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.NewTime(time.Unix(1030, 0))), new(int64(30))
		return p
	}
	endedFirst := deleting(disrupted(corev1.ConditionTrue))
	endedFirst.Status.Phase = corev1.PodFailed
	endedFirst.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, FinishedAt: metav1.NewTime(time.Unix(900, 0))}}}}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"preempted: condition set, deletion asked": {deleting(disrupted(corev1.ConditionTrue)), true},
		"condition set, not deleted (yet)":         {&corev1.Pod{Status: disrupted(corev1.ConditionTrue)}, false},
		"condition false":                          {deleting(disrupted(corev1.ConditionFalse)), false},
		"deleted without a condition":              {deleting(corev1.PodStatus{Phase: corev1.PodRunning}), false},
		"had failed before its deletion":           {endedFirst, false},
	}
	for name, tc := range cases {
		got := DeletedByDisruption(tc.pod)
		if (got != nil) != tc.want {
			t.Errorf("%s: DeletedByDisruption = %+v, want found %t", name, got, tc.want)
		}
		if got != nil && got.Reason != corev1.PodReasonPreemptionByScheduler {
			t.Errorf("%s: got the %s condition", name, got.Type)
		}
	}
}
