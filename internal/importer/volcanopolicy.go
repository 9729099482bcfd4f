package importer

import (
	"fmt"
	"slices"
	"time"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// vcPolicy is a Volcano LifecyclePolicy.
type vcPolicy struct {
	events   []string
	exitCode *int32
	action   string
	timeout  string
	role     string // the task of a task-level policy
}

// vcActions maps Volcano's actions to Muster's.
var vcActions = map[string]musterv1.FailureAction{
	"AbortJob":     musterv1.ActionSuspendJob, // evicts the pods, resumable: muster resume
	"RestartJob":   musterv1.ActionRestartJob,
	"RestartTask":  musterv1.ActionRestartRole, // Volcano's task is Muster's role
	"RestartPod":   musterv1.ActionRestartTask, // and its pod is Muster's task
	"TerminateJob": musterv1.ActionTerminateJob,
	"CompleteJob":  musterv1.ActionCompleteJob,
}

// vcEvents maps Volcano's events to Muster's.
var vcEvents = map[string]musterv1.FailureEvent{
	"PodFailed":     musterv1.EventPodFailed,
	"PodEvicted":    musterv1.EventPodEvicted,
	"PodPending":    musterv1.EventPodPending,
	"Unknown":       musterv1.EventPartlyPlaced,
	"TaskCompleted": musterv1.EventTaskCompleted,
	"TaskFailed":    musterv1.EventTaskFailed,
}

// volcanoRule is the failure rule of one Volcano policy, and why any part
// of it could not be carried over. A nil rule means the policy as a whole
// has no equivalent.
func volcanoRule(pol vcPolicy) (*musterv1.FailureRule, []string) {
	var why []string
	action, ok := vcActions[pol.action]
	if !ok {
		return nil, []string{fmt.Sprintf("action %s has no Muster equivalent", pol.action)}
	}
	rule := &musterv1.FailureRule{Action: action}
	if pol.role != "" {
		rule.Roles = []string{pol.role}
	}
	podOnly := action == musterv1.ActionRestartTask
	seen := map[musterv1.FailureEvent]bool{}
	add := func(e musterv1.FailureEvent) {
		if !seen[e] {
			seen[e] = true
			rule.OnEvents = append(rule.OnEvents, e)
		}
	}
	for _, e := range pol.events {
		if e == "*" {
			// Muster's rules name their events: * is every event that
			// can go with the action and the rule's scope.
			add(musterv1.EventPodFailed)
			add(musterv1.EventPodEvicted)
			if !podOnly {
				add(musterv1.EventTaskCompleted)
				add(musterv1.EventTaskFailed)
				if pol.role == "" {
					add(musterv1.EventPartlyPlaced)
				}
			}
			why = append(why, "* is written out as the events the action can take; PodPending is not among them, as Muster matches it only after a timeout")
			continue
		}
		me, ok := vcEvents[e]
		if !ok {
			why = append(why, fmt.Sprintf("event %s is Volcano's own bookkeeping and has no Muster equivalent", e))
			continue
		}
		if podOnly && (me == musterv1.EventTaskCompleted || me == musterv1.EventTaskFailed || me == musterv1.EventPartlyPlaced) {
			why = append(why, fmt.Sprintf("event %s is not about one pod, which RestartPod restarts", e))
			continue
		}
		add(me)
	}
	if seen[musterv1.EventPodPending] && len(rule.OnEvents) > 1 {
		rule.OnEvents = slices.DeleteFunc(rule.OnEvents, func(e musterv1.FailureEvent) bool { return e == musterv1.EventPodPending })
		why = append(why, "PodPending is a rule of its own in Muster, with a timeout: it is left out of this one")
	}
	if seen[musterv1.EventPartlyPlaced] && len(rule.Roles) > 0 {
		rule.Roles = nil
		why = append(why, "Unknown (PartlyPlaced) is an event of the whole job: the rule is not limited to the task")
	}
	if pol.exitCode != nil {
		if *pol.exitCode < 1 || *pol.exitCode > 255 {
			return nil, []string{fmt.Sprintf("exit code %d is not one a failed container can have", *pol.exitCode)}
		}
		// Volcano matches exit codes on PodFailed only.
		rule.OnEvents = []musterv1.FailureEvent{musterv1.EventPodFailed}
		rule.OnExitCodes = musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{*pol.exitCode}}
	}
	if pol.timeout != "" {
		d, err := time.ParseDuration(pol.timeout)
		switch {
		case err != nil:
			return nil, []string{fmt.Sprintf("timeout %q is not a duration", pol.timeout)}
		case len(rule.OnEvents) == 1 && rule.OnEvents[0] == musterv1.EventPodPending:
			rule.TimeoutSeconds = int32(min(max(d.Seconds(), 1), 86400))
		default:
			why = append(why, "Muster acts at once: a timeout delays only PodPending rules")
		}
	}
	if len(rule.OnEvents) == 1 && rule.OnEvents[0] == musterv1.EventPodPending && rule.TimeoutSeconds == 0 {
		return nil, []string{"PodPending needs a timeout in Muster: every pod is pending for a while when it starts"}
	}
	if len(rule.OnEvents) == 0 && rule.OnExitCodes.Operator == "" {
		return nil, append(why, "no event left that Muster has")
	}
	return rule, why
}
