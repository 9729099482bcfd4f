package v1alpha1

// RunPolicy holds the policies of a job as a whole.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.execution) || !has(self.execution) || oldSelf.execution == self.execution || oldSelf.execution == 'Create' || (oldSelf.execution == 'Start' && self.execution == 'Stop')",message="spec.run.execution may only go from Create to Start or Stop, or from Start to Stop"
// +kubebuilder:validation:XValidation:rule="has(self.debug) == has(oldSelf.debug) && (!has(self.debug) || self.debug == oldSelf.debug)",message="spec.run.debug is immutable: set it when creating the job"
type RunPolicy struct {
	// execution controls whether the job runs: Create holds a new job with
	// nothing created (to prepare objects it will use, then switch to
	// Start); Start runs it; Stop ends it at once as Failed with reason
	// Stopped, keeping the object and its status.
	// +kubebuilder:default=Start
	// +optional
	Execution Execution `json:"execution,omitempty"`

	// debug creates every pod with its command replaced (by default with
	// `sleep inf`), so a user can exec into the job's real environment.
	// Pods that keep running do not complete the job.
	// +optional
	Debug *DebugPolicy `json:"debug,omitempty"`

	// suspend holds the job: its pods are deleted and none are created until
	// it is false again. The operator never writes it, and neither does
	// Kueue: a job Kueue holds says so in status (the Suspended condition,
	// reason WaitingForAdmission or Evicted).
	// +kubebuilder:default=false
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

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

// Execution says whether a job runs.
// +kubebuilder:validation:Enum=Create;Start;Stop
type Execution string

// Executions.
const (
	ExecutionCreate Execution = "Create"
	ExecutionStart  Execution = "Start"
	ExecutionStop   Execution = "Stop"
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
	// skipInitContainers leaves the init containers out.
	// +optional
	SkipInitContainers *bool `json:"skipInitContainers,omitempty"`
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
	// skipInitContainers leaves the role's init containers out.
	// +optional
	SkipInitContainers *bool `json:"skipInitContainers,omitempty"`
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
