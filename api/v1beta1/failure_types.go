package v1beta1

// FailurePolicy is everything that decides what a failure does, in one
// place: how a failed pod is classified, the ordered rules that act on
// failures and other events, the one restart budget, and retries of the
// whole job. What no rule matches, the role's restartPolicy decides. See
// docs/failures.md.
//
// +kubebuilder:validation:MinProperties=1
type FailurePolicy struct {
	// backoffLimit is the job's one restart budget: the number of
	// accountable restarts it may make over every task and every scope. A
	// pod replaced, a role restarted and a new attempt of the whole job
	// each count one, whether a rule, a restartPolicy or
	// spec.failurePolicy.retry asked for it. These never count: a
	// Transient failure the infrastructure caused (eviction, preemption, a
	// pod deleted by someone else) while classification is enabled; the
	// action RestartJobAndIgnoreBackoffLimit; spec.run.restartRequest; and
	// torchrun's own restarts inside a pod
	// (spec.runtime.pytorch.elastic.maxRestarts).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=3
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// backoffLimitPerTask caps the accountable restarts of each task; a task
	// that needs one more fails for good and its role's completion policy
	// decides. Unset: only backoffLimit applies.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	BackoffLimitPerTask *int32 `json:"backoffLimitPerTask,omitempty"`

	// restartMode is how a restart happens, whether of one task, of a role
	// or of the whole job:
	//   - InPlace restarts every container of the task's running pod where
	//     it stands (Kubernetes' RestartAllContainers): same pod, node, IP
	//     and volumes, nothing scheduled again. A pod that cannot (gone,
	//     ended, being deleted, its node lost) is re-created alone, and the
	//     job's events say which and why; with a gang backend, the whole
	//     gang is then re-created and placed afresh.
	//   - Recreate deletes the pod and creates a new one.
	// Unset: the operator's default (--default-restart-mode), by default
	// Auto: InPlace when every Ready, schedulable node declares
	// RestartAllContainersOnContainerExits, else Recreate, decided when the
	// job's pods are made and kept while it has pods. InPlace needs
	// Kubernetes 1.36 (1.35 with the RestartAllContainersOnContainerExits
	// feature gate), the operator's image set for the restart watcher, and
	// a template that does not use the attempt placeholders; a job that
	// lacks one restarts by re-creating its pods.
	// +kubebuilder:validation:Enum=InPlace;Recreate
	// +optional
	RestartMode RestartMode `json:"restartMode,omitempty"`

	// rules act on failures and other events of the job. They are checked
	// in order and the first that matches decides; an event no rule
	// matches goes to the role's restartPolicy.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Rules []FailureRule `json:"rules,omitempty"`

	// classification says how a failed pod is classified: Transient (a
	// retry should end differently), Permanent (it would end the same) or
	// Unknown.
	// +optional
	Classification *Classification `json:"classification,omitempty"`

	// retry starts a new attempt of the whole job when an attempt ends
	// failed (or, with policy Always, ends at all), charged to backoffLimit
	// like any other restart. Unset: an attempt that ends ends the job.
	// +optional
	Retry *RetryPolicy `json:"retry,omitempty"`
}

// RestartMode is how a restart happens: in place, or by re-creating pods.
type RestartMode string

// The restart modes.
const (
	RestartModeInPlace  RestartMode = "InPlace"
	RestartModeRecreate RestartMode = "Recreate"
)

// FailureRule matches an event of the job and takes an action. Every
// criterion that is set must match.
//
// +kubebuilder:validation:XValidation:rule="has(self.onEvents) || has(self.onExitCodes) || has(self.onClasses)",message="set at least one of onEvents, onExitCodes and onClasses"
// +kubebuilder:validation:XValidation:rule="!has(self.onEvents) || !self.onEvents.exists(e, e == 'PodPending') || has(self.timeoutSeconds)",message="onEvents: PodPending needs timeoutSeconds: every pod is Pending for a while when it starts"
// +kubebuilder:validation:XValidation:rule="!has(self.timeoutSeconds) || (has(self.onEvents) && self.onEvents.all(e, e == 'PodPending'))",message="timeoutSeconds applies to the PodPending event only"
// +kubebuilder:validation:XValidation:rule="!(has(self.onExitCodes) || has(self.onClasses)) || !has(self.onEvents) || self.onEvents.all(e, e == 'PodFailed' || e == 'PodEvicted')",message="onExitCodes and onClasses describe a pod's end: with them, onEvents may name only PodFailed and PodEvicted"
// +kubebuilder:validation:XValidation:rule="!(self.action == 'RestartTask' || self.action == 'FailTask') || !has(self.onEvents) || self.onEvents.all(e, e == 'PodFailed' || e == 'PodEvicted' || e == 'PodPending')",message="action: RestartTask and FailTask act on one pod: onEvents may name only PodFailed, PodEvicted and PodPending"
// +kubebuilder:validation:XValidation:rule="!has(self.roles) || !has(self.onEvents) || !self.onEvents.exists(e, e == 'PartlyPlaced' || e == 'Stalled')",message="onEvents: PartlyPlaced and Stalled belong to the whole job, not to roles"
type FailureRule struct {
	// action is what a match does:
	//   - RestartTask replaces the pod of the task the event is about.
	//   - RestartRole replaces every pod of the event's role (one restart).
	//   - RestartJob starts a new attempt of the whole job (a gang restart).
	//   - RestartJobAndIgnoreBackoffLimit does the same without counting
	//     it against backoffLimit (it counts in status.restarts.total).
	//     Give it narrow criteria: a rule that matches every failure
	//     restarts for ever.
	//   - FailTask ends the task as failed for good; its role's completion
	//     policy decides what that means for the job.
	//   - FailJob ends the job as failed, for good: spec.failurePolicy.retry
	//     does not retry it. To fail and run again, use RestartJob.
	//   - CompleteJob ends the job as succeeded.
	//   - SuspendJob suspends the job (no pods, the job kept) until its
	//     spec changes; `muster resume` resumes it. The spec is not written.
	// A restart counts against backoffLimit unless the failure was
	// Transient and classified by the infrastructure.
	// +required
	Action FailureAction `json:"action,omitempty"`

	// roles limits the rule to events of these roles. Empty: every role,
	// and the job-wide PartlyPlaced and Stalled events.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=40
	// +listType=set
	// +optional
	Roles []string `json:"roles,omitempty"`

	// onEvents are the events the rule matches:
	//   - PodFailed: a pod ended in phase Failed.
	//   - PodEvicted: a pod was evicted, preempted, lost with its node, or
	//     deleted by someone else.
	//   - PodPending: a pod has not started timeoutSeconds after it was
	//     created.
	//   - TaskCompleted: every task of a role has succeeded.
	//   - TaskFailed: a task has failed for good.
	//   - PartlyPlaced: some tasks run while other tasks' pods cannot be
	//     scheduled (Volcano's Unknown event).
	//   - Stalled: the job's reported progress has not moved for
	//     spec.progress.stallSeconds (a hang). It is a Transient failure of
	//     the whole job.
	// With onExitCodes or onClasses and no onEvents, the rule matches
	// PodFailed and PodEvicted.
	// +kubebuilder:validation:MaxItems=7
	// +listType=set
	// +optional
	OnEvents []FailureEvent `json:"onEvents,omitempty"`

	// onExitCodes matches the exit code of the pod's failed container that
	// finished first.
	// +optional
	OnExitCodes ExitCodeMatch `json:"onExitCodes,omitzero"`

	// onClasses matches the class the failed pod was given (see
	// spec.failurePolicy.classification).
	// +kubebuilder:validation:MaxItems=3
	// +listType=set
	// +optional
	OnClasses []FailureClass `json:"onClasses,omitempty"`

	// timeoutSeconds is, with PodPending, how long after its creation a pod
	// that has not started matches.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// ExitCodeMatch matches exit codes, as batch/v1's podFailurePolicy does.
//
// +kubebuilder:validation:XValidation:rule="self.operator == 'NotIn' || !self.values.exists(v, v == 0)",message="values: 0 is success, not a failure; with operator In it can never match"
type ExitCodeMatch struct {
	// operator is In (the code is one of values) or NotIn (it is none of
	// them).
	// +required
	Operator ExitCodeOperator `json:"operator,omitempty"`
	// values are exit codes.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=255
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=255
	// +listType=set
	// +required
	Values []int32 `json:"values,omitempty"`
}

// ExitCodeOperator relates an exit code to a set of values.
// +kubebuilder:validation:Enum=In;NotIn
type ExitCodeOperator string

// Exit code operators.
const (
	ExitCodeIn    ExitCodeOperator = "In"
	ExitCodeNotIn ExitCodeOperator = "NotIn"
)

// FailureAction is what a failure rule does.
// +kubebuilder:validation:Enum=RestartTask;RestartRole;RestartJob;RestartJobAndIgnoreBackoffLimit;FailTask;FailJob;CompleteJob;SuspendJob
type FailureAction string

// Failure actions.
const (
	ActionRestartTask                     FailureAction = "RestartTask"
	ActionRestartRole                     FailureAction = "RestartRole"
	ActionRestartJob                      FailureAction = "RestartJob"
	ActionRestartJobAndIgnoreBackoffLimit FailureAction = "RestartJobAndIgnoreBackoffLimit"
	ActionFailTask                        FailureAction = "FailTask"
	ActionFailJob                         FailureAction = "FailJob"
	ActionCompleteJob                     FailureAction = "CompleteJob"
	ActionSuspendJob                      FailureAction = "SuspendJob"
)

// FailureEvent is an event a failure rule can match.
// +kubebuilder:validation:Enum=PodFailed;PodEvicted;PodPending;TaskCompleted;TaskFailed;PartlyPlaced;Stalled
type FailureEvent string

// Failure events.
const (
	EventPodFailed     FailureEvent = "PodFailed"
	EventPodEvicted    FailureEvent = "PodEvicted"
	EventPodPending    FailureEvent = "PodPending"
	EventTaskCompleted FailureEvent = "TaskCompleted"
	EventTaskFailed    FailureEvent = "TaskFailed"
	EventPartlyPlaced  FailureEvent = "PartlyPlaced"
	EventStalled       FailureEvent = "Stalled"
)

// FailureClass classifies a failure.
// +kubebuilder:validation:Enum=Transient;Permanent;Unknown
type FailureClass string

// Failure classes.
const (
	ClassTransient FailureClass = "Transient"
	ClassPermanent FailureClass = "Permanent"
	ClassUnknown   FailureClass = "Unknown"
)

// Classification says how failed pods are classified.
type Classification struct {
	// enabled turns classification on (the default) or off. On, a
	// Transient failure the infrastructure caused (eviction, preemption,
	// node loss, a pod deleted by someone else, exit code 200) is restarted
	// without counting, and a Permanent one (exit 126 or 127, OOM-killed,
	// exit code 210) is never restarted. Off, every restart counts and the
	// class changes nothing.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// rules are checked before Muster's own table; the first that matches
	// classifies the failure.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Rules []ClassificationRule `json:"rules,omitempty"`
}

// ClassificationRule matches a failed pod and gives it a class. Every field
// set must match; the container fields match if any one container matches
// them all. The regular expressions are checked at admission.
//
// +kubebuilder:validation:XValidation:rule="self.class == 'Transient' || !has(self.conflict) || !self.conflict",message="conflict needs class Transient"
// +kubebuilder:validation:XValidation:rule="!(self.code >= 200 && self.code <= 219)",message="code must lie outside Muster's reserved range [200, 219]"
type ClassificationRule struct {
	// podReason is a regular expression on the pod's status reason.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	PodReason string `json:"podReason,omitempty"`
	// podMessage is a regular expression on the pod's status message.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	PodMessage string `json:"podMessage,omitempty"`
	// container is a regular expression on the container's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Container string `json:"container,omitempty"`
	// containerReason is a regular expression on the container's
	// terminated reason, e.g. OOMKilled.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ContainerReason string `json:"containerReason,omitempty"`
	// containerMessage is a regular expression on the container's
	// termination message (with FallbackToLogsOnError, its log tail).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ContainerMessage string `json:"containerMessage,omitempty"`
	// exitCodes is a range of container exit codes.
	// +optional
	ExitCodes CodeRange `json:"exitCodes,omitzero"`
	// signals is a range of signals that killed the container.
	// +optional
	Signals CodeRange `json:"signals,omitzero"`

	// class is what a match means: Transient, Permanent or Unknown.
	// +required
	Class FailureClass `json:"class,omitempty"`
	// conflict marks a transient failure caused by contention for
	// resources: a whole-job retry after it waits a random delay.
	// +optional
	Conflict *bool `json:"conflict,omitempty"`
	// code is recorded as the failure's completion code: a positive number
	// outside Muster's reserved range [200, 219] (Muster's own codes are
	// those and the negative ones).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +required
	Code int32 `json:"code,omitempty"`
	// phrase names the failure in status and events.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Phrase string `json:"phrase,omitempty"`
}

// CodeRange is an inclusive range of codes.
//
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must not exceed max"
type CodeRange struct {
	// min is the smallest code in the range (0, success, never fails).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	// +required
	Min int32 `json:"min,omitempty"`
	// max is the largest code in the range.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	// +required
	Max int32 `json:"max,omitempty"`
}

// RetryPolicy retries a whole job: every pod is recreated in a new attempt,
// a whole-job restart charged to backoffLimit like any other.
type RetryPolicy struct {
	// policy says which ended attempts get a new one. With classification
	// enabled, a Permanent failure is never retried and a Transient one the
	// infrastructure caused is retried without counting.
	//   - Never: none.
	//   - OnTransientFailure: Transient failures only.
	//   - OnFailure (the default): every failed attempt, while backoffLimit
	//     lasts.
	//   - Always: every ended attempt, a success too (a service that must
	//     keep running); as with restartPolicy Always, each counts.
	// Never retried: an end a FailJob rule made, a stop, a spent budget, an
	// invalid spec, an exceeded deadline.
	// +kubebuilder:default=OnFailure
	// +optional
	Policy RetryOn `json:"policy,omitempty"`

	// conflictDelaySeconds bounds the random delay before a new attempt
	// after a transient failure caused by resource contention (exit code
	// 201, or a classification rule with conflict: true), so jobs that
	// collided do not collide again at once. Default 60 to 900 seconds.
	// +optional
	ConflictDelaySeconds DelayBounds `json:"conflictDelaySeconds,omitzero"`
}

// RetryOn says which ended attempts are retried.
// +kubebuilder:validation:Enum=Never;OnTransientFailure;OnFailure;Always
type RetryOn string

// Retry policies.
const (
	RetryNever              RetryOn = "Never"
	RetryOnTransientFailure RetryOn = "OnTransientFailure"
	RetryOnFailure          RetryOn = "OnFailure"
	RetryAlways             RetryOn = "Always"
)

// DelayBounds bounds a random delay, in seconds.
//
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must not exceed max"
type DelayBounds struct {
	// min is the shortest delay.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +required
	Min *int32 `json:"min,omitempty"`
	// max is the longest delay.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +required
	Max *int32 `json:"max,omitempty"`
}
