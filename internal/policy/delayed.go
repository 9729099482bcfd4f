package policy

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DelayedAction is a policy's action waiting for its timeout.
type DelayedAction struct {
	// PodUID is the pod instance the event was about; empty for events
	// about no pod, which pod observations never cancel.
	PodUID types.UID
	// Event is the observed event that scheduled the action.
	Event Event
	// Action is what to do when it is due.
	Action Action
	// Due is when the action runs unless cancelled first.
	Due time.Time
}

// CancelDelayed splits pending into the actions that still stand and those
// cancelled by a newer event ev about the pod with uid:
//   - an action scheduled by PodPending is cancelled by any later event of
//     the same pod other than PodPending: the pod left Pending, which is
//     what the timeout waited for;
//   - an action scheduled by PodFailed or PodEvicted is cancelled when the
//     same pod reaches Running: it recovered by itself.
//
// Actions of other pods are kept. Pod UIDs, not names, identify the pod,
// because a replacement pod reuses the name. Once any action runs, the
// caller drops all the job's remaining delayed actions: they were about the
// state that action replaced.
func CancelDelayed(pending []DelayedAction, uid types.UID, ev Event) (kept, cancelled []DelayedAction) {
	for _, a := range pending {
		if uid != "" && a.PodUID == uid && cancels(a.Event, ev) {
			cancelled = append(cancelled, a)
		} else {
			kept = append(kept, a)
		}
	}
	return kept, cancelled
}

// cancels reports whether a later event of the same pod cancels an action
// scheduled by scheduled.
func cancels(scheduled, later Event) bool {
	switch scheduled {
	case EventPodPending:
		return later != EventPodPending
	case EventPodFailed, EventPodEvicted:
		return later == EventPodRunning
	}
	return false
}
