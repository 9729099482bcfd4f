package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestCancelDelayed(t *testing.T) {
	pending := DelayedAction{PodUID: "a", Event: EventPodPending, Action: ActionRestartPod, Due: t0}
	failed := DelayedAction{PodUID: "a", Event: EventPodFailed, Action: ActionRestartJob, Due: t0}
	evicted := DelayedAction{PodUID: "a", Event: EventPodEvicted, Action: ActionRestartJob, Due: t0}
	otherPod := DelayedAction{PodUID: "b", Event: EventPodPending, Action: ActionRestartPod, Due: t0}
	noPod := DelayedAction{Event: EventTaskFailed, Action: ActionFailJob, Due: t0}
	all := []DelayedAction{pending, failed, evicted, otherPod, noPod}
	cases := map[string]struct {
		pending         []DelayedAction
		uid             types.UID
		ev              Event
		kept, cancelled []DelayedAction
	}{
		"running cancels every delayed action of the pod": {all, "a", EventPodRunning,
			[]DelayedAction{otherPod, noPod}, []DelayedAction{pending, failed, evicted}},
		"failing cancels only the Pending one": {all, "a", EventPodFailed,
			[]DelayedAction{failed, evicted, otherPod, noPod}, []DelayedAction{pending}},
		"eviction cancels only the Pending one": {all, "a", EventPodEvicted,
			[]DelayedAction{failed, evicted, otherPod, noPod}, []DelayedAction{pending}},
		"still pending cancels nothing": {all, "a", EventPodPending, all, nil},
		"another pod's events cancel nothing": {[]DelayedAction{pending, failed}, "c", EventPodRunning,
			[]DelayedAction{pending, failed}, nil},
		"a replacement pod (new UID) does not cancel the old one's actions": {[]DelayedAction{failed}, "a2", EventPodRunning,
			[]DelayedAction{failed}, nil},
		"an observation without a pod cancels nothing": {all, "", EventPodRunning, all, nil},
		"nothing pending": {nil, "a", EventPodRunning, nil, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kept, cancelled := CancelDelayed(tc.pending, tc.uid, tc.ev)
			if diff := cmp.Diff(tc.kept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cancelled, cancelled); diff != "" {
				t.Errorf("cancelled (-want +got):\n%s", diff)
			}
		})
	}
}
