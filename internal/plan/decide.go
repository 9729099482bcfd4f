package plan

import (
	"fmt"
	"strconv"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Decision is what happens to a task whose pod ended. It is made in one
// place, DecideEnd, and carried out by one table, actions: the first
// failure rule that matches the end decides, else the role's restart
// policy does, and either way the outcome is an action of that table.
type Decision struct {
	Action musterv1.FailureAction
	// Rule is the index of the failure rule that decided, or -1 when the
	// restart policy did.
	Rule int
	// Accountable is whether a restart the action makes counts against the
	// budget (see Decide).
	Accountable bool
	// Reason is the job's completion reason, should the action end the job.
	Reason string
	// Why says it in words, for status and events.
	Why string
}

// actionSucceedTask ends a task as succeeded: the one outcome no failure
// rule can ask for, so it is not part of the API.
const actionSucceedTask musterv1.FailureAction = "SucceedTask"

// End is how one task's pod ended.
type End struct {
	// Pod is the pod's name, Exit how it ended.
	Pod  string
	Exit musterv1.ExitStatus
	// Succeeded: the pod exited 0. Vanished: it went away before it ended.
	Succeeded, Vanished bool
}

// DecideEnd decides what happens to a task of role whose pod ended. It is
// pure: classify is whether failure classification is on for the job
// (classifies), read once per plan.
func DecideEnd(job *musterv1.TrainingJob, classify bool, role *musterv1.Role, end End) Decision {
	verdict := Decide(role.RestartPolicy, end.Succeeded, end.Exit, classify)
	what := end.Pod + " ended (" + describeExit(end.Exit) + ")"
	if !end.Succeeded {
		if i, ok := failure.Match(job.Spec.FailurePolicy.Rules, observedEnd(role, end)); ok {
			action := job.Spec.FailurePolicy.Rules[i].Action
			// A rule's restart counts by the failure's class, whatever the
			// restart policy would have done.
			return Decision{Action: action, Rule: i, Accountable: counts(end.Exit, classify), Reason: ruleReasons[action],
				Why: fmt.Sprintf("%s, and spec.failurePolicy.rules[%d] has action %s", what, i, action)}
		}
	}
	d := Decision{Rule: -1, Accountable: verdict.Accountable, Why: what}
	switch {
	case verdict.Verdict == Complete && end.Succeeded:
		d.Action = actionSucceedTask
	case verdict.Verdict == Complete:
		d.Action = musterv1.ActionFailTask
	case verdict.Verdict == FailJob:
		d.Action, d.Reason = musterv1.ActionFailJob, musterv1.ReasonPermanentExitCode
		d.Why = end.Pod + " failed with a permanent error (" + describeExit(end.Exit) + "); restartPolicy " +
			string(role.RestartPolicy) + " does not retry it"
	case gangRestarts(job, role):
		d.Action = musterv1.ActionRestartJob
		d.Why = "restarting the whole job: " + what + " and role " + role.Name + " restarts as a gang"
	default:
		d.Action = musterv1.ActionRestartTask
	}
	return d
}

// ruleReasons are the completion reasons of the rule actions that end a
// job.
var ruleReasons = map[musterv1.FailureAction]string{
	musterv1.ActionFailJob:      musterv1.ReasonPolicyFailed,
	musterv1.ActionTerminateJob: musterv1.ReasonTerminated,
	musterv1.ActionCompleteJob:  musterv1.ReasonPolicyCompleted,
}

// evictionCodes are the completion codes of pods the infrastructure took
// away: they raise PodEvicted rather than PodFailed.
var evictionCodes = map[int32]bool{
	failure.CodePodDeletedExternally: true, failure.CodePodEvicted: true, failure.CodePodNodeLost: true,
	failure.CodePodPreempted: true, failure.CodePodNodeShutdown: true, failure.CodePodDisrupted: true,
	failure.CodePodOutOfResource: true,
}

// observedEnd is a pod's end in the terms the failure rules match.
func observedEnd(role *musterv1.Role, end End) failure.Observed {
	class := failure.ClassOf(end.Exit.Attributes)
	if end.Vanished || evictionCodes[end.Exit.CompletionCode] {
		return failure.Observed{Event: musterv1.EventPodEvicted, Role: role.Name, Class: class}
	}
	return failure.Observed{Event: musterv1.EventPodFailed, Role: role.Name, ExitCode: new(end.Exit.Code), Class: class}
}

// gangRestarts is whether a restart the role's restartPolicy decides
// restarts the whole job rather than the task's pod. In the static roles of
// a PyTorch job one lost rank breaks the process group of all, and so it
// does in a TensorFlow, PaddlePaddle, MPI or JAX job, whose tasks learn
// their peers once, when they start. In a job
// placed by a gang scheduler a lone replacement would not be placed as
// part of a gang, and the room its pod left may be taken meanwhile: the
// gang restarts whole and is placed afresh. Elastic roles replace their
// tasks: their world is made to survive a lost member. A failure rule with
// action RestartTask or RestartJob chooses otherwise.
func gangRestarts(job *musterv1.TrainingJob, role *musterv1.Role) bool {
	if topology.IsElastic(job, role.Name) {
		return false
	}
	rt := job.Spec.Runtime
	// A Volcano-style job keeps Volcano's own behaviour: its failure rules
	// (RestartJob on PodFailed, say) decide.
	static := rt != nil && rt.Volcano == nil
	s := job.Status.Scheduling
	ganged := s != nil && s.Backend != "" && s.Backend != musterv1.GangNone
	return static || ganged
}

func describeExit(e musterv1.ExitStatus) string {
	s := "exit code " + strconv.Itoa(int(e.Code))
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}
