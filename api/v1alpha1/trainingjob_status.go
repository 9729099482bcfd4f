package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// JobPhase is a one-word summary of a job for people. Programs should read
// the conditions.
// +kubebuilder:validation:MaxLength=16
type JobPhase string

// Job phases. See docs/state-machine.md for the transitions.
const (
	PhasePending    JobPhase = "Pending"
	PhaseRunning    JobPhase = "Running"
	PhaseRestarting JobPhase = "Restarting"
	PhaseSuspended  JobPhase = "Suspended"
	PhaseSucceeded  JobPhase = "Succeeded"
	PhaseFailed     JobPhase = "Failed"
)

// TaskState is the state of one task.
// +kubebuilder:validation:MaxLength=16
type TaskState string

// Task states.
const (
	// TaskCreating: the task has no pod yet, or its pod is not in the
	// operator's view yet.
	TaskCreating TaskState = "Creating"
	// TaskPending: the pod exists and has not started.
	TaskPending TaskState = "Pending"
	// TaskRunning: the pod is running.
	TaskRunning TaskState = "Running"
	// TaskRestarting: the pod ended and the operator decided to replace
	// it. The decision is written before the pod is deleted.
	TaskRestarting TaskState = "Restarting"
	// TaskSucceeded: the pod exited 0 and will not be replaced.
	TaskSucceeded TaskState = "Succeeded"
	// TaskFailed: the pod failed and will not be replaced.
	TaskFailed TaskState = "Failed"
	// TaskStopped: the operator stopped the pod because the job was
	// suspended or finished.
	TaskStopped TaskState = "Stopped"
)

// TrainingJobStatus is the observed state of a TrainingJob.
//
// +kubebuilder:validation:MinProperties=1
type TrainingJobStatus struct {
	// conditions are Created, Running, Restarting, Suspended, Succeeded
	// and Failed.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase is a one-word summary for people.
	// +optional
	Phase JobPhase `json:"phase,omitempty"`

	// replicas is the number of tasks of the scalable role, for the /scale
	// subresource.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// selector selects the pods of the scalable role, for the /scale
	// subresource.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Selector string `json:"selector,omitempty"`

	// ready is "<running>/<desired>" tasks, for display.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Ready string `json:"ready,omitempty"`

	// observedGeneration is the spec generation this status was computed
	// from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// startTime is when the job last started or resumed; the active
	// deadline counts from it.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// attempt is the id of the current job attempt. Pods of other attempts
	// are stale and are deleted.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// restarts counts every restart, whatever its path: a pod replaced, a
	// role restarted, a new attempt of the whole job.
	// +optional
	Restarts RestartCounts `json:"restarts"`

	// retries counts the new attempts of the whole job, which
	// spec.failurePolicy.retry.maxRetries limits.
	// +optional
	Retries RestartCounts `json:"retries,omitzero"`

	// restartRequest is the last spec.run.restartRequest the job has seen:
	// acted on with a new attempt when it came while the job ran, recorded
	// only otherwise.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	RestartRequest string `json:"restartRequest,omitempty"`

	// nextAttemptTime is set while a new attempt waits out a random delay
	// after a resource conflict; no pod is created before it.
	// +optional
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`

	// attempts is the history of the job's attempts, newest last; at most
	// the last 10 are kept.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	Attempts []AttemptStatus `json:"attempts,omitempty"`

	// roles is the state of each role, in spec order.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Roles []RoleStatus `json:"roles,omitempty"`

	// autoscaler is what the throughput autoscaler measured and decided.
	// +optional
	Autoscaler *AutoscalerStatus `json:"autoscaler,omitempty"`

	// elastic describes the elastic world: its rendezvous and its size.
	// +optional
	Elastic *ElasticStatus `json:"elastic,omitempty"`

	// scheduling is the gang in force: its backend and, for the current
	// attempt, its gang object.
	// +optional
	Scheduling *SchedulingStatus `json:"scheduling,omitempty"`

	// completion says why the job finished.
	// +optional
	Completion *CompletionStatus `json:"completion,omitempty"`

	// tensorboard is the state of the job's TensorBoard, with its address.
	// +optional
	TensorBoard TensorBoardStatus `json:"tensorboard,omitzero"`

	// progress is how far training is, as the job's program last reported
	// it (v1beta1's spec.progress).
	// +optional
	Progress *ProgressStatus `json:"progress,omitempty"`

	// mpi is what the operator made for an MPI job: the name of its SSH
	// key pair Secret.
	// +optional
	MPI MPIStatus `json:"mpi,omitzero"`
}

// AttemptStatus is one attempt of a job.
type AttemptStatus struct {
	// id of the attempt.
	// +required
	ID int32 `json:"id"`
	// startTime is when the attempt started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when it ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// completion says why it ended.
	// +optional
	Completion *CompletionStatus `json:"completion,omitempty"`
	// podRestarts says how the attempt's pods went on into the next
	// attempt, for a job that restarts in place.
	// +optional
	PodRestarts *PodRestarts `json:"podRestarts,omitempty"`
}

// PodRestarts counts how a restart of the whole job moved its pods into
// the next attempt.
type PodRestarts struct {
	// inPlace is how many restarted in place.
	// +kubebuilder:validation:Minimum=0
	// +optional
	InPlace int32 `json:"inPlace,omitempty"`
	// recreated is how many could not and were re-created.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Recreated int32 `json:"recreated,omitempty"`
	// message names the first re-created pods and why each could not
	// restart in place.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// RestartCounts counts restarts.
type RestartCounts struct {
	// total is every restart, whatever its cause.
	// +optional
	Total int32 `json:"total"`
	// accountable is the restarts that count against
	// spec.failurePolicy.backoffLimit: total less the transient ones.
	// +optional
	Accountable int32 `json:"accountable"`
}

// RoleStatus is the state of one role.
type RoleStatus struct {
	// name of the role.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name,omitempty"`
	// replicas is the number of tasks the role should have.
	// +optional
	Replicas int32 `json:"replicas"`
	// pending is the number of tasks waiting for their pod to start.
	// +optional
	Pending int32 `json:"pending"`
	// running is the number of tasks with a running pod.
	// +optional
	Running int32 `json:"running"`
	// succeeded is the number of tasks that succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`
	// failed is the number of tasks that failed for good.
	// +optional
	Failed int32 `json:"failed"`
	// tasks is the state of the role's tasks, by index, consecutive tasks
	// alike in one entry. The last exits of the most recent failures, and
	// of tasks being restarted, are kept; older ones are summarised away.
	// +listType=map
	// +listMapKey=index
	// +kubebuilder:validation:MaxItems=10000
	// +optional
	Tasks []TaskStatus `json:"tasks,omitempty"`
}

// TaskStatus is the state of one task, or of count consecutive tasks in
// the same state: status stays small at any job size because tasks alike
// share one entry.
type TaskStatus struct {
	// index of the task within its role; with count, of the first of the
	// tasks the entry describes.
	// +required
	Index int32 `json:"index"`
	// count is how many consecutive tasks, from index on, the entry
	// describes; 1 when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Count int32 `json:"count,omitempty"`
	// state of the task.
	// +optional
	State TaskState `json:"state,omitempty"`
	// pod is the name of the task's pod, <job>-<role>-<index>; set on the
	// entries of a single task.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Pod string `json:"pod,omitempty"`
	// podUID is the UID of the pod instance a restart ended, while that
	// pod is still there. A running or pending task's pod is the one its
	// name finds.
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`
	// attempts is the number of pods made for this task so far.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// restarts is the number of times the task's pod was replaced.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// accountableRestarts is the restarts that count against
	// spec.failurePolicy.backoffLimitPerTask.
	// +optional
	AccountableRestarts int32 `json:"accountableRestarts,omitempty"`
	// nodeRestarts is how many restarts of its pod's training containers
	// that their node made alone are charged: a pod that restarts in place
	// has the node restart a failed training container at once, with or
	// without the operator, and the operator charges each such restart it
	// finds, once (see docs/failures.md).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NodeRestarts int32 `json:"nodeRestarts,omitempty"`
	// waiting says why the task's pod does not run yet, when one of its
	// containers waits for a reason other than its turn: the container and
	// the node's reason, e.g. "muster-restart-watcher: ImagePullBackOff"
	// (an image that cannot be pulled, a Secret or ConfigMap it needs
	// missing, an init container crash-looping). Unset otherwise. Each
	// role's status keeps it for its first 8 such tasks.
	// +kubebuilder:validation:MaxLength=160
	// +optional
	Waiting string `json:"waiting,omitempty"`
	// deletionPending marks a task removed by a scale-down: it no longer
	// counts for completion and is never reused; it leaves status once its
	// pod is gone and every task after it has left too.
	// +optional
	DeletionPending bool `json:"deletionPending,omitempty"`
	// lastExit describes how the task's last pod ended.
	// +optional
	LastExit *ExitStatus `json:"lastExit,omitempty"`
}

// ExitStatus describes how a pod ended.
type ExitStatus struct {
	// code is the exit code of the first failed container, or 0.
	// +optional
	Code int32 `json:"code"`
	// reason is the container's or pod's reason, e.g. OOMKilled, Evicted.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Reason string `json:"reason,omitempty"`
	// message is the container's or pod's message, truncated.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// podUID is the UID of the pod instance that ended.
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`
	// container is the name of the container the code comes from.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Container string `json:"container,omitempty"`
	// completionCode classifies how the pod ended (see docs/failures.md):
	// 0 for success, Muster's codes for what it recognises, else the exit
	// code.
	// +optional
	CompletionCode int32 `json:"completionCode,omitempty"`
	// phrase names completionCode, e.g. ContainerOOMKilled.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Phrase string `json:"phrase,omitempty"`
	// attributes qualify a failure: Transient (a retry should end
	// differently), Permanent (it would end the same), Conflict (resource
	// contention). None means unknown.
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	// +kubebuilder:validation:items:MaxLength=16
	// +optional
	Attributes []string `json:"attributes,omitempty"`
	// diagnostics lists the observed fields that decided completionCode.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Diagnostics string `json:"diagnostics,omitempty"`
	// finishedAt is when the pod ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// ElasticStatus describes an elastic world: where its agents meet, and how
// long it has had too few of them.
type ElasticStatus struct {
	// endpoint is what the agents connect to.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// storePod is the job's dedicated store pod, if it has one.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorePod string `json:"storePod,omitempty"`
	// storeRestarts counts the times the store pod was replaced.
	// +optional
	StoreRestarts int32 `json:"storeRestarts,omitempty"`
	// storeEnded is the UID of the store pod whose end storeRestarts last
	// counted, until it is gone: an operator that dies before deleting it
	// does not count it again.
	// +optional
	StoreEnded types.UID `json:"storeEnded,omitempty"`
	// belowMinSince is when the role last fell below minReplicas running
	// tasks; the job fails if it stays there longer than
	// spec.scaling.belowMinTimeoutSeconds.
	// +optional
	BelowMinSince *metav1.Time `json:"belowMinSince,omitempty"`
}

// CompletionStatus says why a job finished.
type CompletionStatus struct {
	// reason is a CamelCase word, the same as the final condition's.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says what triggered the end, e.g. "SucceededTaskCount 1 has
	// reached MinSucceededTaskCount 1 in role master".
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// role is the role of the task that triggered the end, if one did.
	// +kubebuilder:validation:MaxLength=40
	// +optional
	Role string `json:"role,omitempty"`
	// index is the index of the task that triggered the end, if one did.
	// +optional
	Index *int32 `json:"index,omitempty"`
	// exitCode is the exit code of the triggering task, if one did.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`
	// code is the completion code: the triggering task's (see
	// lastExit.completionCode), or Muster's own for an end it decided
	// (e.g. -210 for a stop).
	// +optional
	Code *int32 `json:"code,omitempty"`
	// phrase names code.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Phrase string `json:"phrase,omitempty"`
	// attributes qualify a failure: Transient, Permanent, Conflict.
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	// +kubebuilder:validation:items:MaxLength=16
	// +optional
	Attributes []string `json:"attributes,omitempty"`
	// diagnostics lists the observed fields that decided code.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Diagnostics string `json:"diagnostics,omitempty"`
}

// IsTransient reports whether the exit was classified Transient.
func (e *ExitStatus) IsTransient() bool { return e != nil && hasAttribute(e.Attributes, "Transient") }

// IsPermanent reports whether the exit was classified Permanent.
func (e *ExitStatus) IsPermanent() bool { return e != nil && hasAttribute(e.Attributes, "Permanent") }

func hasAttribute(attrs []string, a string) bool {
	for _, x := range attrs {
		if x == a {
			return true
		}
	}
	return false
}

// AutoscalerStatus is what the autoscaler measured and decided.
type AutoscalerStatus struct {
	// phase is Exploring or Stopped.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Phase string `json:"phase,omitempty"`
	// reason is why it is where it is: Started, ScaledUp, NoGain,
	// PendingPods, ReachedMax, ExternalScale, Disabled.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says it in words.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// replicas is the size it last asked for.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// lastGood is the best size so far.
	// +optional
	LastGood int32 `json:"lastGood,omitempty"`
	// resizedAt is when it last resized the roles.
	// +optional
	ResizedAt *metav1.Time `json:"resizedAt,omitempty"`
	// resizedFrom is spec.scaling.replicas before the resize it last
	// decided, until the spec shows that resize: an operator that died
	// between recording the decision and making it then makes it again,
	// rather than take the old size for someone else's.
	// +optional
	ResizedFrom int32 `json:"resizedFrom,omitempty"`
	// sampledAt is when it last read the job's throughput.
	// +optional
	SampledAt *metav1.Time `json:"sampledAt,omitempty"`
	// lastSample is the newest throughput a read found, in samples per
	// second, whether or not the autoscaler counted it towards a size; a
	// read that finds none keeps the one before.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	LastSample string `json:"lastSample,omitempty"`
	// lastSampleAt is when lastSample was read.
	// +optional
	LastSampleAt *metav1.Time `json:"lastSampleAt,omitempty"`
	// sizes are the throughputs measured, oldest first.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Sizes []SizeThroughput `json:"sizes,omitempty"`
}

// SizeThroughput is the throughput measured at one size.
type SizeThroughput struct {
	// replicas is the size.
	// +required
	Replicas int32 `json:"replicas"`
	// samples are what was measured, in samples per second.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=32
	// +listType=atomic
	// +optional
	Samples []string `json:"samples,omitempty"`
	// throughput is the median of the samples.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Throughput string `json:"throughput,omitempty"`
}

// ProgressStatus is how far training is, as the job's program last
// reported it, with what the operator derived from the reports.
type ProgressStatus struct {
	// step is the training step reached.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Step *int64 `json:"step,omitempty"`

	// totalSteps is the number of steps training will take.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TotalSteps *int64 `json:"totalSteps,omitempty"`

	// epoch is the epoch reached.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Epoch *int64 `json:"epoch,omitempty"`

	// totalEpochs is the number of epochs training will take.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TotalEpochs *int64 `json:"totalEpochs,omitempty"`

	// percent is how much of training is done, 0 to 100: as reported, else
	// step of totalSteps, else epoch of totalEpochs.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`

	// samplesPerSecond is the training throughput last reported, as a
	// decimal number.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +optional
	SamplesPerSecond string `json:"samplesPerSecond,omitempty"`

	// estimatedCompletionTime is when training will be done at the pace
	// between the last two reports that moved it.
	// +optional
	EstimatedCompletionTime *metav1.Time `json:"estimatedCompletionTime,omitempty"`

	// lastProgressTime is when the operator last read a report whose
	// position (step, epoch, percent; for a report without them, anything
	// in it) had moved: a job stalls when it is too long ago.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`

	// reporter is the pod that served the report.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Reporter string `json:"reporter,omitempty"`

	// metrics are the latest values of the metrics the program reported
	// (loss, learning rate, ...), at most 16, by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Metrics []ProgressMetric `json:"metrics,omitempty"`
}

// ProgressMetric is one reported metric's latest value.
type ProgressMetric struct {
	// name of the metric.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_./-]*$`
	// +required
	Name string `json:"name,omitempty"`

	// value is the metric's value, as a decimal number.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	Value string `json:"value,omitempty"`
}

// MPIStatus is what the operator made for an MPI job.
type MPIStatus struct {
	// sshSecretName is the name of the Secret that holds the job's SSH key
	// pair, which every pod of the job mounts at sshMountPath. The API
	// server chose it when the operator created the Secret
	// (metadata.generateName, <job>-ssh-<random>), so nobody could have
	// made a Secret of that name first and had the job's pods trust a key
	// of theirs. No pod of the job is created before it is recorded here,
	// and it stays for the job's life: every attempt mounts the same
	// Secret. A job an earlier version started keeps the Secret its pods
	// already mount, named <job>-ssh-<start of the job's UID>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SSHSecretName string `json:"sshSecretName,omitempty"`
}
