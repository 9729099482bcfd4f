package v1alpha1

// FailurePolicy classifies how pods fail, so that restarts are spent only
// where a retry can help.
type FailurePolicy struct {
	// classify turns classification on (the default): a transient failure
	// (eviction, preemption, node loss, a pod deleted by someone else, exit
	// code 200) is restarted without counting against any limit, and a
	// permanent one (exit 126 or 127, OOM-killed, exit code 210, a rule's
	// Permanent) is never restarted. Unknown failures follow the restart
	// policy and count.
	// +kubebuilder:default=true
	// +optional
	Classify *bool `json:"classify,omitempty"`

	// rules are checked before Muster's defaults; the first that matches
	// classifies the failure.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Rules []FailureRule `json:"rules,omitempty"`
}

// FailureRule matches a failed pod. Every field set must match; the
// container fields match if any one container matches them all.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'Transient' || !has(self.conflict) || !self.conflict",message="conflict needs type Transient"
// +kubebuilder:validation:XValidation:rule="!(self.code >= -1999 && self.code <= 0) && !(self.code >= 200 && self.code <= 219)",message="code must lie outside Muster's reserved ranges [-1999, 0] and [200, 219]"
type FailureRule struct {
	// podReason is a regular expression on the pod's status reason.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	PodReason string `json:"podReason,omitempty"`
	// podMessage is a regular expression on the pod's status message.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	PodMessage string `json:"podMessage,omitempty"`
	// container is a regular expression on the container's name.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Container string `json:"container,omitempty"`
	// containerReason is a regular expression on the container's
	// terminated reason, e.g. OOMKilled.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ContainerReason string `json:"containerReason,omitempty"`
	// containerMessage is a regular expression on the container's
	// termination message (with FallbackToLogsOnError, its log tail).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ContainerMessage string `json:"containerMessage,omitempty"`
	// exitCodes is a range of container exit codes.
	// +optional
	ExitCodes *CodeRange `json:"exitCodes,omitempty"`
	// signals is a range of signals that killed the container.
	// +optional
	Signals *CodeRange `json:"signals,omitempty"`

	// type is what a match means: Transient, Permanent or Unknown.
	// +required
	Type FailureType `json:"type"`
	// conflict marks a transient failure caused by contention for
	// resources: a whole-job retry after it waits a random delay.
	// +optional
	Conflict *bool `json:"conflict,omitempty"`
	// code is recorded as the failure's completion code; it must lie
	// outside Muster's reserved ranges [-1999, 0] and [200, 219].
	// +required
	Code int32 `json:"code"`
	// phrase names the failure in status and events.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Phrase string `json:"phrase"`
}

// CodeRange is an inclusive range of codes.
//
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must not exceed max"
type CodeRange struct {
	// min is the smallest code in the range.
	// +required
	Min int32 `json:"min"`
	// max is the largest code in the range.
	// +required
	Max int32 `json:"max"`
}

// FailureType classifies a failure.
// +kubebuilder:validation:Enum=Transient;Permanent;Unknown
type FailureType string

// Failure types.
const (
	FailureTransient FailureType = "Transient"
	FailurePermanent FailureType = "Permanent"
	FailureUnknown   FailureType = "Unknown"
)

// RetryPolicy retries a whole job: every pod is recreated in a new attempt.
type RetryPolicy struct {
	// maxRetries is how many new attempts a failed attempt may get: 0 (the
	// default) never retries, N retries up to N accountable times, -1
	// retries every failure, -2 retries every ended attempt, even a
	// successful one (a service). With failure classification on, a
	// transient failure is retried without counting and a permanent one
	// never.
	// +kubebuilder:validation:Minimum=-2
	// +optional
	MaxRetries int32 `json:"maxRetries,omitempty"`

	// conflictDelaySeconds bounds the random delay before a new attempt
	// after a transient failure caused by resource contention (exit code
	// 201, or a rule with conflict: true), so jobs that collided do not
	// collide again at once. Default 60 to 900 seconds.
	// +optional
	ConflictDelaySeconds *DelayBounds `json:"conflictDelaySeconds,omitempty"`
}

// DelayBounds bounds a random delay, in seconds.
//
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must not exceed max"
type DelayBounds struct {
	// min is the shortest delay.
	// +kubebuilder:validation:Minimum=0
	// +required
	Min int32 `json:"min"`
	// max is the longest delay.
	// +kubebuilder:validation:Minimum=0
	// +required
	Max int32 `json:"max"`
}

// LifecyclePolicy maps an event or an exit code to an action.
//
// +kubebuilder:validation:XValidation:rule="has(self.events) != has(self.exitCodes)",message="set exactly one of events and exitCodes"
// +kubebuilder:validation:XValidation:rule="!has(self.exitCodes) || self.exitCodes.all(c, c != 0)",message="exitCodes: 0 is success and cannot trigger a policy"
// +kubebuilder:validation:XValidation:rule="!has(self.events) || !self.events.exists(e, e == '*') || size(self.events) == 1",message="events: * must be the only event"
// +kubebuilder:validation:XValidation:rule="!has(self.events) || !self.events.exists(e, e == 'PodPending') || has(self.timeoutSeconds)",message="events: PodPending needs timeoutSeconds"
// +kubebuilder:validation:XValidation:rule="self.action != 'RestartPod' || has(self.exitCodes) || self.events.all(e, e == 'PodFailed' || e == 'PodEvicted' || e == 'PodPending')",message="action: RestartPod applies to pod events and exit codes only"
type LifecyclePolicy struct {
	// events trigger the policy: PodFailed, PodEvicted (a pod evicted or
	// deleted by someone else), PodPending (a pod not started within
	// timeoutSeconds), TaskCompleted (every task of a role succeeded),
	// TaskFailed (a task failed for good), Unknown (the gang is partly
	// placed: some tasks run while others' pods cannot be scheduled), or *
	// for any of them.
	// +kubebuilder:validation:MaxItems=8
	// +listType=set
	// +optional
	Events []PolicyEvent `json:"events,omitempty"`
	// exitCodes trigger the policy when a failed pod's exit code is one of
	// them.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	ExitCodes []int32 `json:"exitCodes,omitempty"`
	// role limits the policy to one role; policies of the role are checked
	// before job-wide ones.
	// +kubebuilder:validation:MaxLength=40
	// +optional
	Role string `json:"role,omitempty"`
	// action is what happens: RestartPod, RestartRole, RestartJob (a new
	// attempt of the whole job), CompleteJob, FailJob, TerminateJob (fail
	// without any retry), SuspendJob.
	// +required
	Action PolicyAction `json:"action"`
	// timeoutSeconds delays the action; an event that makes it moot
	// cancels it (a pending pod that starts, a failed pod replaced and
	// running).
	// +kubebuilder:validation:Minimum=1
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// PolicyEvent is an event a lifecycle policy reacts to.
// +kubebuilder:validation:Enum=PodFailed;PodEvicted;PodPending;TaskCompleted;TaskFailed;Unknown;*
type PolicyEvent string

// PolicyAction is what a lifecycle policy does.
// +kubebuilder:validation:Enum=RestartPod;RestartRole;RestartJob;CompleteJob;FailJob;TerminateJob;SuspendJob
type PolicyAction string

// RestartScope is what a failure that is restarted restarts.
// +kubebuilder:validation:Enum=Pod;Job
type RestartScope string

// Restart scopes.
const (
	// RestartScopePod replaces the failed pod only.
	RestartScopePod RestartScope = "Pod"
	// RestartScopeJob starts a new attempt of the whole job: in a static
	// collective job one broken process breaks the process group of all.
	RestartScopeJob RestartScope = "Job"
)
