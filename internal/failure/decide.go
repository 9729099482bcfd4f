package failure

import (
	"fmt"
	"strconv"

	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// The outcomes no failure rule can ask for, so not part of the API.
const (
	// ActionSucceedTask ends a task as succeeded.
	ActionSucceedTask musterv1.FailureAction = "SucceedTask"
	// ActionFailAttempt ends the job's attempt as failed, as a permanent
	// exit under restartPolicy ExitCode does: spec.failurePolicy.retry may
	// start a new one. A rule's FailJob is final.
	ActionFailAttempt musterv1.FailureAction = "FailAttempt"
)

// Decision is what happens next to a task whose pod ended: an action, and
// whether a restart it makes is charged to the job's budget. Decide makes
// it; the planner carries the action out by its one action table.
type Decision struct {
	Action musterv1.FailureAction
	// Rule is the index of the failure rule that decided, or -1 when the
	// role's restart policy did.
	Rule int
	// Accountable is whether a restart the action makes counts against the
	// budget.
	Accountable bool
	// Reason is the job's completion reason, should the action end the job.
	Reason musterv1.ConditionReason
	// Why says it in words, for status and events.
	Why string
}

// Policy is what a job's spec says about failures, read once per plan.
type Policy struct {
	// Rules are spec.failurePolicy.rules, tried in order.
	Rules []musterv1.FailureRule
	// Classify is whether failure classes refine the restart policy and the
	// budget (spec.failurePolicy.classification, on by default).
	Classify bool
	// Budget is the job's restart budget.
	Budget Budget
}

// PolicyOf is job's failure policy.
func PolicyOf(job *musterv1.TrainingJob) Policy {
	cl := job.Spec.FailurePolicy.Classification
	return Policy{
		Rules:    job.Spec.FailurePolicy.Rules,
		Classify: cl == nil || ptr.Deref(cl.Enabled, true),
		Budget:   BudgetOf(job),
	}
}

// Role is what the decision needs of the role a task belongs to.
type Role struct {
	Name          string
	RestartPolicy musterv1.RestartPolicy
	// Gang is whether a restart the restart policy decides restarts the
	// whole job rather than the task's pod: spec.roles[].restartScope Job.
	Gang bool
}

// RoleOf is what the decision needs of role. Its restart scope is Job
// unless it says Task, the schema's default.
func RoleOf(role *musterv1.Role) Role {
	return Role{Name: role.Name, RestartPolicy: role.RestartPolicy, Gang: role.RestartScope != musterv1.RestartScopeTask}
}

// End is how one task's pod ended.
type End struct {
	// Pod is the pod's name, Exit how it ended (ExitOf and the like).
	Pod  string
	Exit musterv1.ExitStatus
	// Succeeded: the pod exited 0. Vanished: it went away before it ended.
	Succeeded, Vanished bool
}

// Decide decides what happens to a task of role whose pod ended. The
// first failure rule that matches a failure decides; without one, the
// role's restart policy does, refined by the failure's class when
// classification is on:
//   - a Transient failure that the infrastructure caused (eviction,
//     preemption, node loss, a deleted pod, exit code 200/201, a user
//     rule) is restarted under every policy but Never, and does not count;
//   - a Permanent failure is not restarted under OnFailure or Always;
//   - under ExitCode, the retryable exits and OOM kills are restarted
//     whatever their class, and any other exit that is not Transient fails
//     the job at once.
//
// A restart the restart policy decides restarts the whole job in a role
// that restarts as a gang, else the task's pod.
func Decide(p Policy, role Role, end End) Decision {
	what := end.Pod + " ended (" + DescribeExit(end.Exit) + ")"
	if !end.Succeeded {
		if i, ok := Match(p.Rules, observedEnd(role.Name, end)); ok {
			action := p.Rules[i].Action
			// A rule's restart counts by the failure's class, whatever the
			// restart policy would have done.
			return Decision{Action: action, Rule: i, Accountable: counts(end.Exit, p.Classify), Reason: ReasonOf(action),
				Why: fmt.Sprintf("%s, and spec.failurePolicy.rules[%d] has action %s", what, i, action)}
		}
	}
	d := Decision{Rule: -1, Why: what}
	restart := func() Decision {
		d.Accountable = counts(end.Exit, p.Classify)
		d.Action = musterv1.ActionRestartTask
		if role.Gang {
			d.Action = musterv1.ActionRestartJob
			d.Why = "restarting the whole job: " + what + " and role " + role.Name + " restarts as a gang"
		}
		return d
	}
	if end.Succeeded {
		if role.RestartPolicy == musterv1.RestartPolicyAlways {
			return restart()
		}
		d.Action = ActionSucceedTask
		return d
	}
	d.Action = musterv1.ActionFailTask
	switch role.RestartPolicy {
	case musterv1.RestartPolicyNever:
		return d
	case musterv1.RestartPolicyOnFailure, musterv1.RestartPolicyAlways:
		if p.Classify && end.Exit.IsPermanent() {
			return d
		}
		return restart()
	default: // ExitCode, the default policy.
		if retryableExitCodes[end.Exit.Code] || end.Exit.Reason == "OOMKilled" || (p.Classify && end.Exit.IsTransient()) {
			return restart()
		}
		d.Action, d.Reason = ActionFailAttempt, musterv1.ReasonPermanentExitCode
		d.Why = end.Pod + " failed with a permanent error (" + DescribeExit(end.Exit) + "); restartPolicy " +
			string(role.RestartPolicy) + " does not retry it"
		return d
	}
}

// retryableExitCodes are the exits of a process killed by a signal a retry
// can survive: SIGINT (130), SIGKILL (137), SIGUSR1 (138, "please retry")
// and SIGTERM (143).
var retryableExitCodes = map[int32]bool{130: true, 137: true, 138: true, 143: true}

// counts is whether restarting after a failure counts against the budget:
// always, but for a Transient failure the infrastructure caused, with
// classification on.
func counts(exit musterv1.ExitStatus, classify bool) bool {
	return !classify || !exit.IsTransient() || signalled(exit)
}

// signalled is whether a Transient class came only from the signal that
// killed the process. Such restarts still count: a process killed again
// and again must run out of restarts.
func signalled(exit musterv1.ExitStatus) bool {
	return exit.CompletionCode > 128 && exit.CompletionCode < 160
}

// ReasonOf is the job's completion reason when a rule's action ends the
// job, or "".
func ReasonOf(action musterv1.FailureAction) musterv1.ConditionReason { return ruleReasons[action] }

var ruleReasons = map[musterv1.FailureAction]musterv1.ConditionReason{
	musterv1.ActionFailJob:     musterv1.ReasonPolicyFailed,
	musterv1.ActionCompleteJob: musterv1.ReasonPolicyCompleted,
}

// evictionCodes are the completion codes of pods the infrastructure took
// away: they raise PodEvicted rather than PodFailed.
var evictionCodes = map[int32]bool{
	CodePodDeletedExternally: true, CodePodEvicted: true, CodePodNodeLost: true,
	CodePodPreempted: true, CodePodNodeShutdown: true, CodePodDisrupted: true,
	CodePodOutOfResource: true,
}

// observedEnd is a pod's end in the terms the failure rules match.
func observedEnd(role string, end End) Observed {
	class := ClassOf(end.Exit.Attributes)
	if end.Vanished || evictionCodes[end.Exit.CompletionCode] {
		return Observed{Event: musterv1.EventPodEvicted, Role: role, Class: class}
	}
	return Observed{Event: musterv1.EventPodFailed, Role: role, ExitCode: new(end.Exit.Code), Class: class}
}

// DescribeExit says how a pod ended, for events and messages.
func DescribeExit(e musterv1.ExitStatus) string {
	s := "exit code " + strconv.Itoa(int(e.Code))
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}
