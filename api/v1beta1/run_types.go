package v1beta1

// RunPolicy holds the policies of a job as a whole.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.execution) || !has(self.execution) || oldSelf.execution == self.execution || oldSelf.execution == 'Create' || (oldSelf.execution in ['Start', 'Suspend'] && self.execution in ['Start', 'Suspend', 'Stop'])",message="spec.run.execution may go from Create to any value, between Start and Suspend, and from either to Stop, which is final"
// +kubebuilder:validation:XValidation:rule="has(self.debug) == has(oldSelf.debug) && (!has(self.debug) || self.debug == oldSelf.debug)",message="spec.run.debug is immutable: set it when creating the job"
type RunPolicy struct {
	// execution says whether the job's pods should exist:
	//   - Create: not yet. Nothing is made, not even the job's Service, so
	//     that objects the job will use can be prepared first.
	//   - Start (the default): yes; the job runs.
	//   - Suspend: no. Its pods are deleted and the job is kept until Start
	//     again, which creates them afresh: not a restart, never charged.
	//   - Stop: no, and never again. The job ends at once as Failed with
	//     reason Stopped; the object and its status stay.
	// Muster never writes it, and neither does Kueue: a job Kueue holds
	// shows it in status, with the Suspended condition and reason
	// WaitingForAdmission or Evicted.
	// +kubebuilder:default=Start
	// +optional
	Execution Execution `json:"execution,omitempty"`

	// debug creates every pod with its command replaced (by default with
	// `sleep inf`), so a user can exec into the job's real environment.
	// Pods that keep running do not complete the job.
	// +optional
	Debug *DebugPolicy `json:"debug,omitempty"`

	// restartRequest asks for a new attempt of a running job when its value
	// changes: every pod is replaced, as by a RestartJob rule, and the
	// restart is counted in status.restarts.total but never against
	// spec.failurePolicy.backoffLimit. `muster restart` sets it to the time
	// of the request. A value the job was created with, or one set while the
	// job is suspended, held or finished, starts nothing: the job records it
	// in status.restartRequest as seen.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	RestartRequest string `json:"restartRequest,omitempty"`

	// resumeRequest ends, when its value changes, a suspension a failure
	// rule's SuspendJob action made (any other change of the spec ends it
	// too). `muster resume` sets it to the time of the request, with
	// execution: Start when the job is suspended by execution, in one
	// change.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ResumeRequest string `json:"resumeRequest,omitempty"`

	// activeDeadlineSeconds fails the job once it has run this long since
	// it last started or resumed.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	ActiveDeadlineSeconds int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes the job, and with it its pods, this
	// long after it finished. 0 deletes it at once; unset keeps it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// cleanPodPolicy says which pods are deleted when the job finishes:
	// Running (the default) deletes pods that have not ended, All deletes
	// every pod, None keeps them all, even running ones.
	// +kubebuilder:default=Running
	// +optional
	CleanPodPolicy CleanPodPolicy `json:"cleanPodPolicy,omitempty"`
}

// Execution says whether a job's pods should exist.
// +kubebuilder:validation:Enum=Create;Start;Suspend;Stop
type Execution string

// Executions.
const (
	ExecutionCreate  Execution = "Create"
	ExecutionStart   Execution = "Start"
	ExecutionSuspend Execution = "Suspend"
	ExecutionStop    Execution = "Stop"
)

// DebugPolicy replaces the commands of a job's pods.
type DebugPolicy struct {
	// command replaces every container's command, and its args are
	// dropped. Default: sleep inf.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`
	// runInitContainers false leaves the init containers out, Muster's
	// own wait for peers included. Unset: they run.
	// +optional
	RunInitContainers *bool `json:"runInitContainers,omitempty"`
	// roles overrides the above per role.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Roles []RoleDebug `json:"roles,omitempty"`
}

// RoleDebug is one role's debug settings.
type RoleDebug struct {
	// name of the role.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name,omitempty"`
	// command replaces the role's container commands.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`
	// runInitContainers false leaves the role's init containers out. A
	// role runs them only if both this and the job-wide value allow it.
	// +optional
	RunInitContainers *bool `json:"runInitContainers,omitempty"`
}

// CleanPodPolicy says which pods are deleted when a job finishes.
// +kubebuilder:validation:Enum=None;Running;All
type CleanPodPolicy string

// Clean pod policies.
const (
	CleanPodPolicyNone    CleanPodPolicy = "None"
	CleanPodPolicyRunning CleanPodPolicy = "Running"
	CleanPodPolicyAll     CleanPodPolicy = "All"
)
