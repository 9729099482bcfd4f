package v1alpha1

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
	// ConditionSuspended is true while spec.run.suspend holds the job with
	// no pods.
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
)

// Reasons of conditions, of status.completion and of events. Every reason
// the operator writes is one of these.
const (
	ReasonCreated              = "Created"
	ReasonPodsPending          = "PodsPending"
	ReasonPodsRunning          = "PodsRunning"
	ReasonScaling              = "Scaling"
	ReasonTaskRestarting       = "TaskRestarting"
	ReasonSuspended            = "Suspended"
	ReasonResumed              = "Resumed"
	ReasonCompletionPolicy     = "CompletionPolicyMet"
	ReasonAllTasksCompleted    = "AllTasksCompleted"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonPermanentExitCode    = "PermanentExitCode"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonPodCreateFailed      = "PodCreateFailed"
	ReasonNameTaken            = "NameTaken"
	ReasonTTLExpired           = "TTLExpired"
	ReasonStarting             = "Starting"
	ReasonReady                = "Ready"
	ReasonTensorBoardFailed    = "TensorBoardCreateFailed"
	ReasonStopped              = "Stopped"
	ReasonHeld                 = "Held"
	ReasonWaitingForRoles      = "WaitingForRoles"
	ReasonJobRestarting        = "JobRestarting"
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonTerminated           = "Terminated"
	ReasonPolicyCompleted      = "PolicyCompleted"
	ReasonPolicyFailed         = "PolicyFailed"
	ReasonSuspendedByPolicy    = "SuspendedByPolicy"
	ReasonPodPendingTimeout    = "PodPendingTimeout"
	ReasonForceDeleted         = "ForceDeleted"
	ReasonBelowMinReplicas     = "BelowMinReplicas"
	ReasonTaskFailed           = "TaskFailed"
	ReasonTaskRetriesExhausted = "TaskRetriesExhausted"
	ReasonScalingDown          = "ScalingDown"
	ReasonScaledDown           = "ScaledDown"
	ReasonStoreRestarting      = "StoreRestarting"
	ReasonRoleRestarted        = "RoleRestarted"
	ReasonPodDeleted           = "PodDeleted"
	ReasonPodsCreated          = "PodsCreated"
	ReasonAutoscaling          = "Autoscaling"
	ReasonGangPending          = "GangPending"
	ReasonGangQueued           = "Queued"
	ReasonGangUnschedulable    = "Unschedulable"
	ReasonGangScheduled        = "GangScheduled"
	ReasonGangCreateFailed     = "GangCreateFailed"
	ReasonGangBackendDisabled  = "GangBackendDisabled"
	ReasonWaitingForAdmission  = "WaitingForAdmission"
	ReasonEvicted              = "Evicted"
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
