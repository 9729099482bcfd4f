package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// failureCase is an event an action is taken on: a task's pod that ended
// or has not started (task set), every task of a role that succeeded or one
// that failed for good (role set), or the whole job (neither).
type failureCase struct {
	role        *musterv1.Role
	task        *musterv1.TaskStatus
	pod         *corev1.Pod
	accountable bool
	why         string
	// reason is the job's completion reason if the action ends the job.
	reason musterv1.ConditionReason
}

// actions is what each action does, whether a failure rule or a restart
// policy chose it. The planner looks an action up here and nowhere else, so
// the table is the whole meaning of an action. It is filled in init
// because the actions themselves raise events that take actions.
var actions map[musterv1.FailureAction]func(*applier, failureCase)

func init() {
	actions = map[musterv1.FailureAction]func(*applier, failureCase){
		failure.ActionSucceedTask: func(a *applier, c failureCase) {
			settle(c.task, true, a.out)
		},
		musterv1.ActionRestartTask: func(a *applier, c failureCase) {
			a.restartTask(c.role, c.task, c.pod, c.accountable)
		},
		musterv1.ActionRestartRole: func(a *applier, c failureCase) {
			a.roleRestarts[c.role.Name] = c.why
			markEnded(c.task)
		},
		musterv1.ActionRestartJob: func(a *applier, c failureCase) {
			markEnded(c.task)
			a.restartJob(c.why, c.accountable)
		},
		musterv1.ActionRestartJobAndIgnoreBackoffLimit: func(a *applier, c failureCase) {
			markEnded(c.task)
			a.restartJob(c.why, false)
		},
		musterv1.ActionFailTask: func(a *applier, c failureCase) {
			settle(c.task, false, a.out)
			if c.pod != nil && !observe.Ended(c.pod) {
				// A pod that never started: the task is over.
				a.out.deletePod(c.pod, "failed by a rule")
			}
			a.taskFailedRule(c.role, c.task)
		},
		failure.ActionFailAttempt: func(a *applier, c failureCase) {
			markEnded(c.task)
			a.jobDecision = a.jobDecision.fail(completionOf(c))
		},
		musterv1.ActionFailJob: func(a *applier, c failureCase) {
			markEnded(c.task)
			a.jobDecision = a.jobDecision.failForGood(completionOf(c))
		},
		musterv1.ActionCompleteJob: func(a *applier, c failureCase) {
			markEnded(c.task)
			if a.jobDecision.outcome == nil {
				a.jobDecision.outcome = &Outcome{Succeeded: true, Completion: completionOf(c)}
			}
		},
		musterv1.ActionSuspendJob: func(a *applier, c failureCase) {
			suspendByPolicy(a.c, a.st, c.why, a.out)
			if c.task != nil {
				// Made again when the job resumes.
				c.task.State = musterv1.TaskStopped
			}
		},
	}
}

// act carries out action for c.
func (a *applier) act(action musterv1.FailureAction, c failureCase) {
	actions[action](a, c)
}

// applyRule carries out failure rule i for an event of a role or the job.
func (a *applier) applyRule(i int, c failureCase) {
	action := a.c.job.Spec.FailurePolicy.Rules[i].Action
	c.why += fmt.Sprintf(", and spec.failurePolicy.rules[%d] has action %s", i, action)
	c.reason = failure.ReasonOf(action)
	a.act(action, c)
}

// match finds the rule for an event, if the job is not already ending or
// restarting in this plan.
func (a *applier) match(obs failure.Observed) (int, bool) {
	if a.jobDecision.decided() {
		return -1, false
	}
	return failure.Match(a.c.job.Spec.FailurePolicy.Rules, obs)
}

// markEnded makes a task whose pod ended final, unless it succeeded.
func markEnded(ts *musterv1.TaskStatus) {
	if ts != nil && ts.State != musterv1.TaskSucceeded {
		ts.State = musterv1.TaskFailed
	}
}

// completionOf is the job's completion when an action ends it.
func completionOf(c failureCase) musterv1.CompletionStatus {
	out := musterv1.CompletionStatus{Reason: c.reason, Message: c.why}
	if c.role != nil {
		out.Role = c.role.Name
	}
	if c.task != nil {
		out = taskCompletion(c.reason, c.why, out.Role, c.task)
	}
	return out
}

func taskCompletion(reason musterv1.ConditionReason, msg, role string, ts *musterv1.TaskStatus) musterv1.CompletionStatus {
	c := musterv1.CompletionStatus{Reason: reason, Message: msg, Role: role, Index: new(ts.Index)}
	inheritExit(&c, ts.LastExit)
	return c
}

// inheritExit copies a triggering task's exit into the job's completion.
func inheritExit(c *musterv1.CompletionStatus, e *musterv1.ExitStatus) {
	if e == nil {
		return
	}
	c.ExitCode = new(e.Code)
	c.Code = new(e.CompletionCode)
	c.Phrase = e.Phrase
	c.Attributes = append([]string(nil), e.Attributes...)
	c.Diagnostics = e.Diagnostics
}
