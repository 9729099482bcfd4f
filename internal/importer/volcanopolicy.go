package importer

import (
	"fmt"
	"slices"
	"time"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
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
	"TerminateJob": musterv1.ActionFailJob,     // final: Volcano never restarts a terminated job
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
	action, ok := vcActions[pol.action]
	if !ok {
		return nil, []string{fmt.Sprintf("action %s has no Muster equivalent", pol.action)}
	}
	rule := &musterv1.FailureRule{Action: action}
	if pol.role != "" {
		rule.Roles = []string{pol.role}
	}
	var why []string
	rule.OnEvents, why = ruleEvents(pol.events, action == musterv1.ActionRestartTask, pol.role == "")
	if slices.Contains(rule.OnEvents, musterv1.EventPartlyPlaced) && len(rule.Roles) > 0 {
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
	pending := len(rule.OnEvents) == 1 && rule.OnEvents[0] == musterv1.EventPodPending
	if pol.timeout != "" {
		d, err := time.ParseDuration(pol.timeout)
		switch {
		case err != nil:
			return nil, []string{fmt.Sprintf("timeout %q is not a duration", pol.timeout)}
		case pending:
			rule.TimeoutSeconds = int32(min(max(d.Seconds(), 1), 86400))
		default:
			why = append(why, "Muster acts at once: a timeout delays only PodPending rules")
		}
	}
	switch {
	case pending && rule.TimeoutSeconds == 0:
		return nil, []string{"PodPending needs a timeout in Muster: every pod is pending for a while when it starts"}
	case len(rule.OnEvents) == 0 && rule.OnExitCodes.Operator == "":
		return nil, append(why, "no event left that Muster has")
	}
	return rule, why
}

// ruleEvents maps Volcano's events to Muster's. * is every event that can
// go with the action (podOnly: RestartPod's) and the rule's scope
// (jobWide: a job's policy, which may name PartlyPlaced).
func ruleEvents(events []string, podOnly, jobWide bool) ([]musterv1.FailureEvent, []string) {
	var out []musterv1.FailureEvent
	var why []string
	add := func(es ...musterv1.FailureEvent) {
		for _, e := range es {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	for _, e := range events {
		if e == "*" {
			add(musterv1.EventPodFailed, musterv1.EventPodEvicted)
			if !podOnly {
				add(musterv1.EventTaskCompleted, musterv1.EventTaskFailed)
			}
			if !podOnly && jobWide {
				add(musterv1.EventPartlyPlaced)
			}
			why = append(why, "* is written out as the events the action can take; PodPending is not among them, as Muster matches it only after a timeout")
			continue
		}
		me, ok := vcEvents[e]
		switch {
		case !ok:
			why = append(why, fmt.Sprintf("event %s is Volcano's own bookkeeping and has no Muster equivalent", e))
		case podOnly && me != musterv1.EventPodFailed && me != musterv1.EventPodEvicted && me != musterv1.EventPodPending:
			why = append(why, fmt.Sprintf("event %s is not about one pod, which RestartPod restarts", e))
		default:
			add(me)
		}
	}
	if slices.Contains(out, musterv1.EventPodPending) && len(out) > 1 {
		out = slices.DeleteFunc(out, func(e musterv1.FailureEvent) bool { return e == musterv1.EventPodPending })
		why = append(why, "PodPending is a rule of its own in Muster, with a timeout: it is left out of this one")
	}
	return out, why
}
