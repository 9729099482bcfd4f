package policy

import "slices"

// Event is something that happened to a job that a lifecycle policy can
// react to.
type Event string

// Events.
const (
	// EventAny matches every event a policy can name.
	EventAny Event = "*"
	// EventPodFailed: a pod of the job ended in phase Failed.
	EventPodFailed Event = "PodFailed"
	// EventPodEvicted: a pod of the job was evicted or deleted before it
	// ended.
	EventPodEvicted Event = "PodEvicted"
	// EventPodPending: a pod went back to, or stays in, Pending. Policies
	// on it need a timeout: pods are Pending for a while on every start.
	EventPodPending Event = "PodPending"
	// EventTaskCompleted: every task of a role has succeeded.
	EventTaskCompleted Event = "TaskCompleted"
	// EventTaskFailed: a task of a role has failed for good (its restarts
	// are used up).
	EventTaskFailed Event = "TaskFailed"
	// EventUnknown: the job's gang is partly lost: some pods cannot be
	// scheduled while others run.
	EventUnknown Event = "Unknown"

	// EventPodRunning: a pod reached Running. It is observed, to cancel
	// delayed actions, but no policy can name it.
	EventPodRunning Event = "PodRunning"
)

// policyEvents are the events a policy can name.
var policyEvents = []Event{
	EventAny, EventPodFailed, EventPodEvicted, EventPodPending, EventTaskCompleted, EventTaskFailed, EventUnknown,
}

// podEvents are the events about one pod; RestartPod needs one of them.
var podEvents = []Event{EventPodFailed, EventPodEvicted, EventPodPending}

// Action is what a lifecycle policy does when it matches.
type Action string

// Actions.
const (
	// ActionRestartPod replaces the pod the event is about.
	ActionRestartPod Action = "RestartPod"
	// ActionRestartRole replaces every pod of the event's role.
	ActionRestartRole Action = "RestartRole"
	// ActionRestartJob replaces every pod of the job (a gang restart).
	ActionRestartJob Action = "RestartJob"
	// ActionCompleteJob stops the pods that are still running and ends
	// the job as succeeded.
	ActionCompleteJob Action = "CompleteJob"
	// ActionFailJob stops the pods that are still running and ends the
	// job as failed.
	ActionFailJob Action = "FailJob"
	// ActionTerminateJob stops every pod and ends the job as terminated;
	// unlike a suspended job it cannot be resumed.
	ActionTerminateJob Action = "TerminateJob"
	// ActionSuspendJob stops every pod and keeps the job, to be resumed.
	ActionSuspendJob Action = "SuspendJob"
	// ActionResumeJob resumes a suspended job.
	ActionResumeJob Action = "ResumeJob"
)

// policyActions are the actions a policy can take.
var policyActions = []Action{
	ActionRestartPod, ActionRestartRole, ActionRestartJob, ActionCompleteJob,
	ActionFailJob, ActionTerminateJob, ActionSuspendJob, ActionResumeJob,
}

// Policy reacts to events, or to pods failing with given exit codes, with an
// action.
type Policy struct {
	// Events trigger the policy. Exactly one of Events and ExitCodes is set.
	Events []Event
	// ExitCodes trigger the policy when a pod fails with one of them (see
	// Observed.ExitCode). 0 is not a failure and is not allowed.
	ExitCodes []int32
	// Role scopes the policy to one role's events; empty means the whole
	// job. A role's own policies are tried before the job's.
	Role string
	// Action is what to do.
	Action Action
	// TimeoutSeconds delays the action; a later observation of the same
	// pod may cancel it (see CancelDelayed). Required for PodPending.
	TimeoutSeconds *int32
}

// Observed is an event as the controller saw it.
type Observed struct {
	Event Event
	// Role is the role the event is about; empty for job-wide events such
	// as Unknown.
	Role string
	// ExitCode is, for PodFailed, the exit code of the pod's failed
	// container that finished first: the same container the task's last
	// exit reports, where Volcano reads the first container whatever
	// happened to it.
	ExitCode *int32
}

// Match finds the policy that handles ev: the role's own policies first,
// then the job-wide ones, each in order; the first match wins. ok is false
// when no policy matches and the restart policy decides instead.
//
// A policy whose action needs a role (RestartPod, RestartRole) never
// matches an event that has none.
func Match(policies []Policy, ev Observed) (p Policy, ok bool) {
	if !slices.Contains(policyEvents, ev.Event) || ev.Event == EventAny {
		return Policy{}, false
	}
	scopes := []string{""}
	if ev.Role != "" {
		scopes = []string{ev.Role, ""}
	}
	for _, scope := range scopes {
		for _, p := range policies {
			if p.Role == scope && p.matches(ev) {
				return p, true
			}
		}
	}
	return Policy{}, false
}

func (p Policy) matches(ev Observed) bool {
	if ev.Role == "" && needsRole(p.Action) {
		return false
	}
	if slices.Contains(p.Events, EventAny) || slices.Contains(p.Events, ev.Event) {
		return true
	}
	return ev.Event == EventPodFailed && ev.ExitCode != nil && slices.Contains(p.ExitCodes, *ev.ExitCode)
}

// needsRole reports whether action acts on the event's role or pod.
func needsRole(a Action) bool {
	return a == ActionRestartPod || a == ActionRestartRole
}
