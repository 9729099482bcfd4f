package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrainingJob runs a distributed training job: one pod per task of each role,
// one headless Service for the whole job, restarts and completion decided by
// the operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=tj,categories=muster
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`,description="Running tasks / desired tasks"
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.restarts.total`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the job's Service"
// +kubebuilder:validation:XValidation:rule="self.spec.roles.all(r, size(self.metadata.name) + size(r.name) + size(string(int(r.replicas) > 0 ? int(r.replicas) - 1 : 0)) + 2 <= 63)",message="metadata.name and spec.roles[].name are too long: pod names <job>-<role>-<index> must be at most 63 characters"
type TrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the user asks for.
	// +required
	Spec TrainingJobSpec `json:"spec"`

	// status is what the operator observed and decided.
	// +optional
	Status TrainingJobStatus `json:"status,omitempty"`
}

// TrainingJobSpec is the desired state of a TrainingJob.
//
// +kubebuilder:validation:XValidation:rule="has(self.runtime) == has(oldSelf.runtime) && (!has(self.runtime) || self.runtime == oldSelf.runtime)",message="spec.runtime is immutable"
// +kubebuilder:validation:XValidation:rule="self.roles.map(r, r.name) == oldSelf.roles.map(r, r.name)",message="spec.roles: roles cannot be added, removed or reordered"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.pytorch) || !has(self.runtime.pytorch.masterRole) || self.roles.exists(r, r.name == self.runtime.pytorch.masterRole)",message="spec.runtime.pytorch.masterRole must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.pytorch) || !has(self.runtime.pytorch.elastic) || self.roles.exists(r, r.name == self.runtime.pytorch.elastic.role)",message="spec.runtime.pytorch.elastic.role must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.pytorch) || !has(self.runtime.pytorch.elastic) || !has(self.runtime.pytorch.elastic.additionalRoles) || self.runtime.pytorch.elastic.additionalRoles.all(n, n != self.runtime.pytorch.elastic.role && self.roles.exists(r, r.name == n))",message="spec.runtime.pytorch.elastic.additionalRoles must name other roles of spec.roles"
// +kubebuilder:validation:XValidation:rule="self.roles.all(r, !has(r.dependsOn) || r.dependsOn.all(d, d.role != r.name && self.roles.exists(x, x.name == d.role)))",message="spec.roles[].dependsOn[].role must name another role of the job"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || (has(self.runtime) && has(self.runtime.pytorch) && has(self.runtime.pytorch.elastic) && self.roles.exists(r, r.name == self.runtime.pytorch.elastic.role && has(r.minReplicas) && has(r.maxReplicas)))",message="spec.autoscaling needs an elastic role with minReplicas and maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.policies) || self.policies.all(p, !has(p.role) || self.roles.exists(r, r.name == p.role))",message="spec.policies[].role must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.run) || !has(self.run.debug) || !has(self.run.debug.roles) || self.run.debug.roles.all(d, self.roles.exists(r, r.name == d.name))",message="spec.run.debug.roles[].name must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || size(self.roles) == 1 || (has(self.runtime) && has(self.runtime.pytorch) && has(self.runtime.pytorch.elastic))",message="spec.replicas needs a scalable role: an elastic role (spec.runtime.pytorch.elastic) or a job with a single role"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(oldSelf.replicas) || self.roles.all(r, !(has(self.runtime) && has(self.runtime.pytorch) && has(self.runtime.pytorch.elastic) ? (r.name == self.runtime.pytorch.elastic.role || (has(self.runtime.pytorch.elastic.additionalRoles) && r.name in self.runtime.pytorch.elastic.additionalRoles)) : r.name == self.roles[0].name) || oldSelf.roles.exists(o, o.name == r.name && o.replicas == r.replicas))",message="spec.roles[].replicas of the scalable roles cannot change once spec.replicas is set: scale through spec.replicas (kubectl scale, muster scale)"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || (self.replicas >= self.roles.filter(r, (has(self.runtime) && has(self.runtime.pytorch) && has(self.runtime.pytorch.elastic) ? (r.name == self.runtime.pytorch.elastic.role || (has(self.runtime.pytorch.elastic.additionalRoles) && r.name in self.runtime.pytorch.elastic.additionalRoles)) : r.name == self.roles[0].name)).map(r, has(r.minReplicas) ? r.minReplicas : 0).sum() && (self.roles.exists(r, (has(self.runtime) && has(self.runtime.pytorch) && has(self.runtime.pytorch.elastic) ? (r.name == self.runtime.pytorch.elastic.role || (has(self.runtime.pytorch.elastic.additionalRoles) && r.name in self.runtime.pytorch.elastic.additionalRoles)) : r.name == self.roles[0].name) && !has(r.maxReplicas)) || self.replicas <= self.roles.filter(r, (has(self.runtime) && has(self.runtime.pytorch) && has(self.runtime.pytorch.elastic) ? (r.name == self.runtime.pytorch.elastic.role || (has(self.runtime.pytorch.elastic.additionalRoles) && r.name in self.runtime.pytorch.elastic.additionalRoles)) : r.name == self.roles[0].name)).map(r, has(r.maxReplicas) ? r.maxReplicas : 0).sum()))",message="spec.replicas must lie within the scalable roles' minReplicas and maxReplicas (summed over the elastic roles)"
type TrainingJobSpec struct {
	// replicas is the size of the job's scalable role: its elastic role, or
	// its only role. The operator fills it from that role's
	// spec.roles[].replicas when it is unset; from then on it is the one
	// place to scale that role. The /scale subresource reads and writes it,
	// so `kubectl scale` and a HorizontalPodAutoscaler work.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// runtime tells how the processes of the job find each other. Without
	// it the job is generic: every container gets Muster's environment
	// variables and the pod template may use {{...}} placeholders.
	// +optional
	Runtime *Runtime `json:"runtime,omitempty"`

	// roles are the groups of identical tasks the job runs, in order. Each
	// task is one pod named <job>-<role>-<index>.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Roles []Role `json:"roles"`

	// autoscaling resizes the elastic role by measured training throughput.
	// +optional
	Autoscaling *AutoscalingPolicy `json:"autoscaling,omitempty"`

	// failurePolicy classifies failures as transient, permanent or unknown,
	// with user rules checked before Muster's defaults.
	// +optional
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty"`

	// retry retries the whole job in a new attempt when an attempt fails.
	// +optional
	Retry *RetryPolicy `json:"retry,omitempty"`

	// policies map events and exit codes to actions. A role's policies are
	// checked before job-wide ones; the first match wins and overrides the
	// role's restart policy.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Policies []LifecyclePolicy `json:"policies,omitempty"`

	// run holds the policies of the job as a whole: execution, suspension,
	// deadlines, clean-up and the restart budget.
	// +kubebuilder:default={}
	// +optional
	Run RunPolicy `json:"run,omitzero"`
}

// Runtime selects the framework wiring of a job.
type Runtime struct {
	// pytorch wires the job for torch.distributed: MASTER_ADDR, MASTER_PORT,
	// RANK and WORLD_SIZE for a static world, or torchrun's PET_* settings
	// for an elastic one.
	// +optional
	PyTorch *PyTorchRuntime `json:"pytorch,omitempty"`
}

// PyTorchRuntime configures the PyTorch wiring.
type PyTorchRuntime struct {
	// masterRole names the role whose task 0 is rank 0 and serves
	// MASTER_ADDR. Defaults to the role named "master" if there is one, else
	// to the first role.
	// +kubebuilder:validation:MaxLength=40
	// +optional
	MasterRole string `json:"masterRole,omitempty"`

	// port is MASTER_PORT, the port rank 0 listens on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=23456
	// +optional
	Port *int32 `json:"port,omitempty"`

	// elastic runs the tasks of one role under torchrun's elastic agent. The
	// role's minReplicas and maxReplicas bound the world.
	// +optional
	Elastic *ElasticPolicy `json:"elastic,omitempty"`
}

// ElasticPolicy configures torchrun elastic training for one role.
type ElasticPolicy struct {
	// role names the elastic role.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Role string `json:"role"`

	// additionalRoles are further roles whose tasks join the same elastic
	// world, e.g. workers on a second node pool with a template of their
	// own. spec.replicas then sizes them all together, split by each
	// role's scalingWeight within its minReplicas and maxReplicas.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=40
	// +listType=set
	// +optional
	AdditionalRoles []string `json:"additionalRoles,omitempty"`

	// rendezvous says where the agents meet. The default, a c10d store in a
	// small pod of the job, survives the loss of any worker.
	// +kubebuilder:default={}
	// +optional
	Rendezvous Rendezvous `json:"rendezvous,omitzero"`

	// rendezvousPort is the port of the c10d rendezvous store.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=29400
	// +optional
	RendezvousPort *int32 `json:"rendezvousPort,omitempty"`

	// maxRestarts is torchrun's --max-restarts: how often the agent restarts
	// its workers in place before it gives up. A scale-down and a lost peer
	// each use one; a scale-up does not.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=3
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// nprocPerNode is torchrun's --nproc-per-node: a number, or "gpu",
	// "cpu" or "auto".
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]*|gpu|cpu|auto)$`
	// +kubebuilder:default="1"
	// +optional
	NProcPerNode string `json:"nprocPerNode,omitempty"`

	// belowMinTimeoutSeconds is how long the role may have fewer than
	// minReplicas running tasks (workers lost and not yet replaced, pods
	// that cannot be scheduled) before the job fails with reason
	// BelowMinReplicas. The job never fails sooner for a lost worker.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=600
	// +optional
	BelowMinTimeoutSeconds *int32 `json:"belowMinTimeoutSeconds,omitempty"`
}

// Rendezvous configures torchrun's rendezvous.
//
// +kubebuilder:validation:XValidation:rule="(has(self.store) && self.store == 'External') == has(self.endpoint)",message="endpoint is required with store External, and only then"
// +kubebuilder:validation:XValidation:rule="!has(self.backend) || self.backend == 'c10d' || (has(self.store) && self.store == 'External')",message="the etcd and etcd-v2 backends need store External with an etcd endpoint"
type Rendezvous struct {
	// backend is torchrun's --rdzv-backend: c10d (default), etcd or
	// etcd-v2.
	// +kubebuilder:default=c10d
	// +optional
	Backend RendezvousBackend `json:"backend,omitempty"`
	// store says who hosts the rendezvous state:
	//   - Dedicated (default): a c10d store in a pod of its own,
	//     <job>-store, created with the job's attempt; every agent is a
	//     client, so losing any worker, rank 0's included, is survivable.
	//     If the store pod itself fails it is replaced, and the agents,
	//     which lose their rendezvous, are restarted by the role's restart
	//     policy (use OnFailure).
	//   - Worker: task 0's agent hosts the c10d store, as torchrun does by
	//     default. Losing that pod ends every agent.
	//   - External: endpoint, e.g. a shared etcd.
	// +kubebuilder:default=Dedicated
	// +optional
	Store RendezvousStore `json:"store,omitempty"`
	// endpoint is host:port of an External store.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// lastCallTimeoutSeconds is how long a forming world waits for more
	// agents once it has minReplicas (torch's default is 30 s, which every
	// rescale and recovery pays; Muster's is 5 s).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=5
	// +optional
	LastCallTimeoutSeconds *int32 `json:"lastCallTimeoutSeconds,omitempty"`
	// joinTimeoutSeconds bounds how long a world may take to form.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=600
	// +optional
	JoinTimeoutSeconds *int32 `json:"joinTimeoutSeconds,omitempty"`
}

// RendezvousBackend is torchrun's rendezvous backend.
// +kubebuilder:validation:Enum=c10d;etcd;etcd-v2
type RendezvousBackend string

// RendezvousStore says who hosts the rendezvous state.
// +kubebuilder:validation:Enum=Dedicated;Worker;External
type RendezvousStore string

// Rendezvous stores.
const (
	StoreDedicated RendezvousStore = "Dedicated"
	StoreWorker    RendezvousStore = "Worker"
	StoreExternal  RendezvousStore = "External"
)

// Role is a group of identical tasks.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.replicas",message="spec.roles[].minReplicas must not exceed replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.replicas <= self.maxReplicas",message="spec.roles[].replicas must not exceed maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy == 'Never'",message="spec.roles[].template.spec.restartPolicy must be empty or Never: restarts are set by spec.roles[].restartPolicy"
type Role struct {
	// name of the role: a DNS-1035 label, unique within the job.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// replicas is the number of tasks of the role.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas"`

	// minReplicas is the smallest world an elastic role may run with.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the largest world an elastic role may run with.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// scalingWeight is the role's share when spec.replicas is split among
	// several elastic roles (default 1): each role gets its minReplicas, and
	// the rest goes out one task at a time to the role with the fewest tasks
	// per weight that is below its maxReplicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ScalingWeight *int32 `json:"scalingWeight,omitempty"`

	// restartPolicy decides what happens when a task's pod ends. The pod's
	// own restartPolicy is always Never: the operator replaces pods itself,
	// so every restart is seen and counted.
	//   - Never: a failed task stays failed; the completion policy decides.
	//   - OnFailure: a failed pod is replaced.
	//   - Always: any ended pod, failed or succeeded, is replaced.
	//   - ExitCode: a pod killed by a signal a retry survives (exit 130, 137,
	//     138, 143) or evicted, preempted, OOM-killed or lost with its node is
	//     replaced; any other non-zero exit fails the job at once.
	// +kubebuilder:default=ExitCode
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// maxRetries caps the accountable restarts of each task of the role; a
	// task that needs one more fails for good. Unset: only the job's
	// backoffLimit applies.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRetries *int32 `json:"maxRetries,omitempty"`

	// restartScope is what a restart restarts: Pod replaces the failed pod,
	// Job starts a new attempt of the whole job (every pod recreated). The
	// default is Job for the static roles of a PyTorch job, whose process
	// group one lost rank breaks, and Pod otherwise.
	// +optional
	RestartScope RestartScope `json:"restartScope,omitempty"`

	// gracefulDeletionTimeoutSeconds: when set, a pod of the role still
	// terminating this long after its deletion was asked is force-deleted,
	// so its replacement can start even if its node is gone (availability
	// over consistency: the old process may still run). Unset, pods are
	// never force-deleted and a task never has two pods.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GracefulDeletionTimeoutSeconds *int64 `json:"gracefulDeletionTimeoutSeconds,omitempty"`

	// dependsOn holds the role's tasks back until other roles have reached a
	// state: a worker role that must not start before its master runs, a
	// trainer that waits for a dataset role to succeed. Only roles listed
	// earlier in spec.roles may be named, so there is never a cycle; a job
	// that names a later role fails at once with reason InvalidDependency.
	// +listType=map
	// +listMapKey=role
	// +kubebuilder:validation:MaxItems=8
	// +optional
	DependsOn []Dependency `json:"dependsOn,omitempty"`

	// completion decides when this role ends the job. Absent, a preset is
	// chosen from the roles present (see docs/state-machine.md).
	// +optional
	Completion *CompletionPolicy `json:"completion,omitempty"`

	// template is the pod template of the role's tasks. It may use the
	// placeholders {{MUSTER_JOB_NAMESPACE}}, {{MUSTER_JOB_NAME}},
	// {{MUSTER_JOB_UID}}, {{MUSTER_ROLE_NAME}}, {{MUSTER_TASK_INDEX}},
	// {{MUSTER_ATTEMPT_ID}}, {{MUSTER_TASK_ATTEMPT}} and {{MUSTER_POD_NAME}}.
	// +required
	Template corev1.PodTemplateSpec `json:"template"`
}

// Dependency names a role and the state it must reach.
type Dependency struct {
	// role is the name of an earlier role of the job.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Role string `json:"role"`
	// when is the state every task of that role must have reached: Running
	// (each task runs, or has succeeded) or Succeeded.
	// +kubebuilder:default=Running
	// +optional
	When DependencyCondition `json:"when,omitempty"`
}

// DependencyCondition is the state a depended-on role must reach.
// +kubebuilder:validation:Enum=Running;Succeeded
type DependencyCondition string

// Dependency conditions.
const (
	DependencyRunning   DependencyCondition = "Running"
	DependencySucceeded DependencyCondition = "Succeeded"
)

// RestartPolicy says which ended pods of a role are replaced.
// +kubebuilder:validation:Enum=Never;OnFailure;Always;ExitCode
type RestartPolicy string

// Restart policies.
const (
	RestartPolicyNever     RestartPolicy = "Never"
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	RestartPolicyAlways    RestartPolicy = "Always"
	RestartPolicyExitCode  RestartPolicy = "ExitCode"
)

// CompletionPolicy ends the job from the tasks of one role. A value below 1
// disables that rule.
type CompletionPolicy struct {
	// minSucceeded: the job succeeds once this many tasks of the role have
	// succeeded.
	// +optional
	MinSucceeded *int32 `json:"minSucceeded,omitempty"`

	// minFailed: the job fails once this many tasks of the role have failed
	// for good (no restart left).
	// +optional
	MinFailed *int32 `json:"minFailed,omitempty"`
}

// RunPolicy holds the policies of a job as a whole.
//
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
	// it is false again. Kueue sets it to admit jobs.
	// +kubebuilder:default=false
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// activeDeadlineSeconds fails the job once it has run this long since
	// it last started or resumed.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes the job, and with it its pods, this
	// long after it finished. 0 deletes it at once; unset keeps it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// cleanPodPolicy says which pods are deleted when the job finishes:
	// Running (the default) deletes pods that have not ended, All deletes
	// every pod, None keeps them all, even running ones.
	// +kubebuilder:default=Running
	// +optional
	CleanPodPolicy CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// backoffLimit is the number of accountable restarts the job may make,
	// counted over every task and every restart path. Transient
	// infrastructure failures (eviction, preemption, a pod deleted by
	// someone else) are restarted without counting. Default 3.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=3
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
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
	// +optional
	Command []string `json:"command,omitempty"`
	// skipInitContainers leaves the init containers out.
	// +optional
	SkipInitContainers bool `json:"skipInitContainers,omitempty"`
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
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name"`
	// command replaces the role's container commands.
	// +optional
	Command []string `json:"command,omitempty"`
	// skipInitContainers leaves the role's init containers out.
	// +optional
	SkipInitContainers bool `json:"skipInitContainers,omitempty"`
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

// TrainingJobList is a list of TrainingJobs.
//
// +kubebuilder:object:root=true
type TrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the TrainingJobs.
	Items []TrainingJob `json:"items"`
}
