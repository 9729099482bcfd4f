package v1beta1

// Labels Muster puts on every object it creates for a job. They are the
// selector keys of the job's Service and of the operator's own cache.
const (
	// LabelJobName is the name of the owning TrainingJob.
	LabelJobName = "muster.dev/job-name"
	// LabelRole is the role the pod belongs to.
	LabelRole = "muster.dev/role"
	// LabelTaskIndex is the index of the pod's task within its role.
	LabelTaskIndex = "muster.dev/task-index"
	// LabelJobAttempt is the job attempt the pod was created for.
	LabelJobAttempt = "muster.dev/attempt"
	// LabelTaskAttempt counts the instances of a task: 1 for its first pod,
	// 2 for the pod that replaced it, and so on.
	LabelTaskAttempt = "muster.dev/task-attempt"

	// LabelScalable is "true" on the pods of a job's scalable roles, the
	// /scale selector when several roles make them up.
	LabelScalable = "muster.dev/scalable"
	// LabelComponent marks pods that are not tasks, e.g. the rendezvous
	// store (value "rendezvous-store").
	LabelComponent = "muster.dev/component"
	// ComponentStore is LabelComponent's value on a rendezvous store pod.
	ComponentStore = "rendezvous-store"

	// AnnotationJobUID is the UID of the owning TrainingJob.
	AnnotationJobUID = "muster.dev/job-uid"
	// AnnotationInPlaceRestarts counts the in-place restarts the operator
	// asked of a pod that can restart in place: the pod's restart watcher
	// restarts every container of the pod when it goes up.
	AnnotationInPlaceRestarts = "muster.dev/in-place-restarts"

	// FinalizerTracking holds every pod the operator creates until the
	// job's status accounts for it, so that a pod that ends and is deleted
	// before the operator sees it is still seen to have ended, with its exit
	// code, rather than taken for one that vanished.
	FinalizerTracking = "muster.dev/tracking"
)

// Environment variables Muster puts first in every container and init
// container, so that user variables can refer to them as $(NAME).
const (
	EnvJobNamespace = "MUSTER_JOB_NAMESPACE"
	EnvJobName      = "MUSTER_JOB_NAME"
	EnvJobUID       = "MUSTER_JOB_UID"
	EnvRoleName     = "MUSTER_ROLE_NAME"
	EnvRoleReplicas = "MUSTER_ROLE_REPLICAS"
	EnvTaskIndex    = "MUSTER_TASK_INDEX"
	EnvJobAttempt   = "MUSTER_ATTEMPT_ID"
	EnvTaskAttempt  = "MUSTER_TASK_ATTEMPT"
	EnvPodName      = "MUSTER_POD_NAME"
	EnvPodUID       = "MUSTER_POD_UID"
	EnvServiceName  = "MUSTER_SERVICE_NAME"
	// EnvProgressPort is, for a job with spec.progress, the port to serve
	// its training progress on (examples/progress/muster_progress.py reads
	// it); set in the pods made while spec.progress is.
	EnvProgressPort = "MUSTER_PROGRESS_PORT"
	// EnvInPlaceRestarts is, in a pod that restarts in place, the value of
	// its muster.dev/in-place-restarts annotation when the container
	// started.
	EnvInPlaceRestarts = "MUSTER_IN_PLACE_RESTARTS"
)

// ConditionType is the type of a TrainingJob condition.
type ConditionType string

// Condition types of a TrainingJob. See docs/state-machine.md.
const (
	// ConditionCreated is true once the operator has accepted the job and
	// made its Service.
	ConditionCreated ConditionType = "Created"
	// ConditionRunning is true while every task that should run has a
	// running pod.
	ConditionRunning ConditionType = "Running"
	// ConditionRestarting is true while failed tasks are being replaced.
	ConditionRestarting ConditionType = "Restarting"
	// ConditionSuspended is true while the job is held with no pods:
	// spec.run.execution Suspend, a SuspendJob rule, or Kueue not admitting
	// it.
	ConditionSuspended ConditionType = "Suspended"
	// ConditionGangScheduled is, for a job with a gang backend, whether the
	// current attempt's gang has been placed; false with the scheduler's
	// reason while it waits (Queued, Unschedulable).
	ConditionGangScheduled ConditionType = "GangScheduled"
	// ConditionSucceeded is true once the job has finished successfully.
	ConditionSucceeded ConditionType = "Succeeded"
	// ConditionFailed is true once the job has finished unsuccessfully.
	ConditionFailed ConditionType = "Failed"
	// ConditionTensorBoardReady is, for a job with spec.tensorboard,
	// whether its TensorBoard serves; false with why not (Starting,
	// NameTaken, TensorBoardCreateFailed, InvalidSpec, TTLExpired).
	ConditionTensorBoardReady ConditionType = "TensorBoardReady"
	// ConditionStalled is, for a job with spec.progress.stallSeconds,
	// whether its reported progress has stood still that long (Stalled),
	// or moves (Progressing). Absent until the job first reports.
	ConditionStalled ConditionType = "Stalled"
)

// ConditionReason is the reason of a TrainingJob condition, of
// status.completion and of status.attempts[].completion: a CamelCase word
// a program may match on. Every one the operator writes is below.
type ConditionReason string

// Condition reasons.
const (
	// Created.
	ReasonCreated ConditionReason = "Created"
	ReasonHeld    ConditionReason = "Held"

	// Running and Restarting.
	ReasonPodsPending     ConditionReason = "PodsPending"
	ReasonPodsRunning     ConditionReason = "PodsRunning"
	ReasonScaling         ConditionReason = "Scaling"
	ReasonTaskRestarting  ConditionReason = "TaskRestarting"
	ReasonWaitingForRoles ConditionReason = "WaitingForRoles"
	ReasonNameTaken       ConditionReason = "NameTaken"
	ReasonPodCreateFailed ConditionReason = "PodCreateFailed"

	// Suspended.
	ReasonSuspended           ConditionReason = "Suspended"
	ReasonSuspendedByPolicy   ConditionReason = "SuspendedByPolicy"
	ReasonWaitingForAdmission ConditionReason = "WaitingForAdmission"
	ReasonEvicted             ConditionReason = "Evicted"
	ReasonResumed             ConditionReason = "Resumed"

	// GangScheduled (a backend may pass its own reason through too).
	ReasonGangPending         ConditionReason = "GangPending"
	ReasonGangQueued          ConditionReason = "Queued"
	ReasonGangUnschedulable   ConditionReason = "Unschedulable"
	ReasonGangScheduled       ConditionReason = "GangScheduled"
	ReasonGangBackendDisabled ConditionReason = "GangBackendDisabled"

	// TensorBoardReady.
	ReasonReady             ConditionReason = "Ready"
	ReasonStarting          ConditionReason = "Starting"
	ReasonTensorBoardFailed ConditionReason = "TensorBoardCreateFailed"
	ReasonTTLExpired        ConditionReason = "TTLExpired"
	ReasonInvalidSpec       ConditionReason = "InvalidSpec"

	// Stalled.
	ReasonStalled     ConditionReason = "Stalled"
	ReasonProgressing ConditionReason = "Progressing"

	// Succeeded and Failed, and status.completion.
	ReasonCompletionPolicy     ConditionReason = "CompletionPolicyMet"
	ReasonAllTasksCompleted    ConditionReason = "AllTasksCompleted"
	ReasonPolicyCompleted      ConditionReason = "PolicyCompleted"
	ReasonBackoffLimitExceeded ConditionReason = "BackoffLimitExceeded"
	ReasonPermanentExitCode    ConditionReason = "PermanentExitCode"
	ReasonDeadlineExceeded     ConditionReason = "DeadlineExceeded"
	ReasonPolicyFailed         ConditionReason = "PolicyFailed"
	ReasonStopped              ConditionReason = "Stopped"
	ReasonBelowMinReplicas     ConditionReason = "BelowMinReplicas"

	// status.attempts[].completion of an attempt a restart cut short.
	ReasonJobRestarting ConditionReason = "JobRestarting"
)

// EventReason is the reason of an Event the operator records on a
// TrainingJob. The job's end is recorded with the reason of its completion
// (EndedEventReason).
type EventReason string

// Event reasons.
const (
	EventReasonPodsCreated          EventReason = "PodsCreated"
	EventReasonTaskRestarting       EventReason = "TaskRestarting"
	EventReasonTaskFailed           EventReason = "TaskFailed"
	EventReasonTaskRetriesExhausted EventReason = "TaskRetriesExhausted"
	EventReasonJobRestarting        EventReason = "JobRestarting"
	EventReasonStoreRestarting      EventReason = "StoreRestarting"
	EventReasonScalingDown          EventReason = "ScalingDown"
	EventReasonScalingUp            EventReason = "ScalingUp"
	EventReasonForceDeleted         EventReason = "ForceDeleted"
	EventReasonAutoscaling          EventReason = "Autoscaling"
	EventReasonSuspended            EventReason = "Suspended"
	EventReasonSuspendedByPolicy    EventReason = "SuspendedByPolicy"
	EventReasonWaitingForAdmission  EventReason = "WaitingForAdmission"
	EventReasonEvicted              EventReason = "Evicted"
	EventReasonResumed              EventReason = "Resumed"
	EventReasonNameTaken            EventReason = "NameTaken"
	EventReasonPodCreateFailed      EventReason = "PodCreateFailed"
	EventReasonGangCreateFailed     EventReason = "GangCreateFailed"
	EventReasonTensorBoardFailed    EventReason = "TensorBoardCreateFailed"
	EventReasonTTLExpired           EventReason = "TTLExpired"
	EventReasonPodLabelsChanged     EventReason = "PodLabelsChanged"
	EventReasonStalled              EventReason = "Stalled"
	EventReasonProgressUnreadable   EventReason = "ProgressUnreadable"
	EventReasonCacheBehind          EventReason = "PodCacheBehind"
)

// EndedEventReason is the reason of the Event that records a job's end
// with completion reason r: the same word.
func EndedEventReason(r ConditionReason) EventReason { return EventReason(r) }

// Reasons the operator writes in status.roles[].tasks[].lastExit.reason,
// which otherwise holds the pod's or its container's own (OOMKilled,
// Evicted, ...).
const (
	ExitReasonPodFailed         = "PodFailed"
	ExitReasonPodDeleted        = "PodDeleted"
	ExitReasonScaledDown        = "ScaledDown"
	ExitReasonPodPendingTimeout = "PodPendingTimeout"
	ExitReasonRoleRestarted     = "RoleRestarted"
)

// DefaultBackoffLimit is the number of accountable restarts a job may make
// when spec.failurePolicy.backoffLimit is not set.
const DefaultBackoffLimit int32 = 3

// DefaultPyTorchPort is the port of the static PyTorch master.
const DefaultPyTorchPort int32 = 23456

// Default ports of the other runtimes, for jobs the API server's defaults
// never reached.
const (
	DefaultTensorFlowPort int32 = 2222
	DefaultPaddlePort     int32 = 30236
	DefaultJAXPort        int32 = 6666
)

// DefaultRendezvousPort is the port of the c10d rendezvous store.
const DefaultRendezvousPort int32 = 29400
