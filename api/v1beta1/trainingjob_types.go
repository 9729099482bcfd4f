package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxReplicas bounds every replica count of the API: a role's replicas, a
// scalable role's maxReplicas and spec.scaling.replicas.
const MaxReplicas = 10000

// MaxTasks bounds the tasks of one job, all roles and every scalable role
// at its maxReplicas together.
const MaxTasks = 10000

// TrainingJob runs a distributed training job: one pod per task of each role,
// one headless Service for the whole job, restarts and completion decided by
// the operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:subresource:scale:specpath=.spec.scaling.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=tj,categories=muster
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`,description="Running tasks / desired tasks"
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.restarts.total`
// +kubebuilder:printcolumn:name="Progress",type=integer,JSONPath=`.status.progress.percent`,description="Percent of training done, as the job's program reports it (spec.progress)"
// +kubebuilder:printcolumn:name="ETA",type=string,JSONPath=`.status.progress.estimatedCompletionTime`,priority=1,description="When training will be done at its recent pace"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",fieldPath=.metadata,message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the job's Service"
// +kubebuilder:validation:XValidation:rule="self.spec.roles.all(r, size(self.metadata.name) + size(r.name) <= 56)",fieldPath=.spec.roles,message="metadata.name and spec.roles[].name together must be at most 56 characters: pod names <job>-<role>-<index> must fit in 63 with any index up to 10000"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tensorboard) || size(self.metadata.name) <= 51",fieldPath=.spec.tensorboard,message="spec.tensorboard needs metadata.name of at most 51 characters: its Service is named <job>-tensorboard"
type TrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the user asks for.
	// +required
	Spec TrainingJobSpec `json:"spec,omitzero"`

	// status is what the operator observed and decided.
	// +optional
	Status TrainingJobStatus `json:"status,omitempty,omitzero"`
}

// TrainingJobSpec is the desired state of a TrainingJob. It has one section
// per concern: runtime (how processes find each other), roles (what runs),
// scaling (how big the scalable roles are), failurePolicy (what happens
// when something fails) and run (the job as a whole).
//
// +kubebuilder:validation:XValidation:rule="has(self.runtime) == has(oldSelf.runtime) && (!has(self.runtime) || self.runtime == oldSelf.runtime)",message="spec.runtime is immutable"
// +kubebuilder:validation:XValidation:rule="self.roles.map(r, r.name) == oldSelf.roles.map(r, r.name)",message="spec.roles: roles cannot be added, removed or reordered"
// +kubebuilder:validation:XValidation:rule="has(self.scaling) == has(oldSelf.scaling) && (!has(self.scaling) || self.scaling.roles.map(s, s.name) == oldSelf.scaling.roles.map(s, s.name))",message="spec.scaling: the scalable roles are set when the job is created and never change"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.pytorch) || !has(self.runtime.pytorch.masterRole) || self.roles.exists(r, r.name == self.runtime.pytorch.masterRole)",message="spec.runtime.pytorch.masterRole must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.pytorch) || !has(self.runtime.pytorch.elastic) || has(self.scaling)",message="spec.runtime.pytorch.elastic needs spec.scaling: its roles are the elastic world"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.tensorflow) || !has(self.runtime.tensorflow.taskTypes) || self.runtime.tensorflow.taskTypes.all(t, self.roles.exists(r, r.name == t.role))",fieldPath=.runtime.tensorflow.taskTypes,message="spec.runtime.tensorflow.taskTypes[].role must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.paddle) || self.roles.exists(r, r.name == (has(self.runtime.paddle.trainerRole) ? self.runtime.paddle.trainerRole : 'trainer'))",fieldPath=.runtime.paddle.trainerRole,message="spec.runtime.paddle.trainerRole must name a role in spec.roles (default trainer)"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.paddle) || (has(self.runtime.paddle.mode) && self.runtime.paddle.mode == 'Collective') || self.roles.exists(r, r.name == (has(self.runtime.paddle.pserverRole) ? self.runtime.paddle.pserverRole : 'pserver'))",fieldPath=.runtime.paddle.pserverRole,message="spec.runtime.paddle.pserverRole must name a role in spec.roles in ParameterServer mode (default pserver)"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || !has(self.runtime.mpi) || (size(self.roles) >= 2 && self.roles[size(self.roles) - 1].name == (has(self.runtime.mpi.launcherRole) ? self.runtime.mpi.launcherRole : 'launcher'))",fieldPath=.runtime.mpi.launcherRole,message="spec.runtime.mpi.launcherRole must name the last role of spec.roles, after at least one worker role (default launcher)"
// +kubebuilder:validation:XValidation:rule="!has(self.runtime) || has(self.runtime.pytorch) || has(self.runtime.volcanoJob) || !has(self.scaling)",fieldPath=.scaling,message="spec.scaling is for PyTorch and Volcano Job jobs only: the tensorflow, paddle, mpi and jax runtimes give every task its peers when it starts, which a rescale would leave stale"
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || self.scaling.roles.all(s, self.roles.exists(r, r.name == s.name))",message="spec.scaling.roles[].name must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || self.roles.all(r, !has(r.replicas) || !self.scaling.roles.exists(s, s.name == r.name))",message="spec.roles[].replicas must be unset for a scalable role: spec.scaling.replicas sizes it"
// +kubebuilder:validation:XValidation:rule="self.roles.map(r, has(r.replicas) ? r.replicas : 1).sum() + (has(self.scaling) ? self.scaling.roles.map(s, s.maxReplicas).sum() : 0) <= 10000",fieldPath=.roles,message="a job may have at most 10000 tasks, counting spec.roles[].replicas and, for scalable roles, spec.scaling.roles[].maxReplicas"
// +kubebuilder:validation:XValidation:rule="self.roles.all(r, !has(r.dependsOn) || r.dependsOn.all(d, d.role != r.name && self.roles.exists(x, x.name == d.role)))",message="spec.roles[].dependsOn[].role must name another role of the job"
// +kubebuilder:validation:XValidation:rule="!has(self.failurePolicy) || !has(self.failurePolicy.rules) || self.failurePolicy.rules.all(f, !has(f.roles) || f.roles.all(n, self.roles.exists(r, r.name == n)))",message="spec.failurePolicy.rules[].roles must name roles in spec.roles"
// +kubebuilder:validation:XValidation:rule="has(self.scheduling) == has(oldSelf.scheduling) && (!has(self.scheduling) || self.scheduling == oldSelf.scheduling)",message="spec.scheduling is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.scheduling) || !has(self.scheduling.roles) || self.scheduling.roles.all(q, self.roles.exists(r, r.name == q.name))",fieldPath=.scheduling.roles,message="spec.scheduling.roles[].name must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.scheduling) || !has(self.scheduling.minAvailable) || self.scheduling.minAvailable <= self.roles.filter(r, !has(self.scaling) || !self.scaling.roles.exists(s, s.name == r.name)).map(r, has(r.replicas) ? r.replicas : 1).sum() + (has(self.scaling) ? self.scaling.roles.map(s, has(s.minReplicas) ? s.minReplicas : 1).sum() : 0)",fieldPath=.scheduling.minAvailable,message="spec.scheduling.minAvailable may not exceed the job's smallest size: the fixed roles' replicas plus each scalable role's minReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.scheduling) || !has(self.scheduling.roles) || self.scheduling.roles.all(q, has(self.scaling) && self.scaling.roles.exists(s, s.name == q.name) ? self.scaling.roles.exists(s, s.name == q.name && q.minAvailable <= (has(s.minReplicas) ? s.minReplicas : 1)) : self.roles.exists(r, r.name == q.name && q.minAvailable <= (has(r.replicas) ? r.replicas : 1)))",fieldPath=.scheduling.roles,message="spec.scheduling.roles[].minAvailable may not exceed the role's replicas (a scalable role's minReplicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.scheduling) || !has(self.scheduling.roles) || !has(self.scheduling.minAvailable) || self.scheduling.roles.map(q, q.minAvailable).sum() <= self.scheduling.minAvailable",fieldPath=.scheduling.minAvailable,message="spec.scheduling.minAvailable may not be below the sum of spec.scheduling.roles[].minAvailable"
// +kubebuilder:validation:XValidation:rule="!has(self.run) || !has(self.run.debug) || !has(self.run.debug.roles) || self.run.debug.roles.all(d, self.roles.exists(r, r.name == d.name))",message="spec.run.debug.roles[].name must name a role in spec.roles"
// +kubebuilder:validation:XValidation:rule="!has(self.scheduling) || !has(self.scheduling.topology) || !self.roles.exists(r, has(r.topology))",fieldPath=.scheduling.topology,message="spec.scheduling.topology places the whole job and spec.roles[].topology one role: set one or the other"
type TrainingJobSpec struct {
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
	Roles []Role `json:"roles,omitempty"`

	// scaling makes some roles scalable: spec.scaling.replicas sizes them
	// together within their bounds, and it is the job's /scale
	// subresource (kubectl scale, a HorizontalPodAutoscaler, the
	// throughput autoscaler). An elastic PyTorch job's scalable roles are
	// its elastic world.
	// +optional
	Scaling Scaling `json:"scaling,omitzero"`

	// failurePolicy says what happens when a pod fails: how failures are
	// classified, which rules act on them, and the one restart budget every
	// restart is counted against.
	// +kubebuilder:default={backoffLimit: 3}
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitzero"`

	// scheduling says how the job's pods are placed: as a gang through a
	// gang scheduler, in a queue, at a priority.
	// +optional
	Scheduling Scheduling `json:"scheduling,omitempty,omitzero"`

	// run holds the policies of the job as a whole: execution, suspension,
	// deadlines and clean-up.
	// +kubebuilder:default={execution: Start}
	// +optional
	Run RunPolicy `json:"run,omitzero"`

	// tensorboard runs a TensorBoard on the job's event files for as long
	// as the job exists, or until a TTL after it finished. It may be added,
	// changed or removed at any time.
	// +optional
	TensorBoard TensorBoard `json:"tensorboard,omitzero"`

	// progress makes the operator read the training progress the job's
	// program reports into status.progress, and can make a job whose
	// progress stops Stalled. It may be added, changed or removed at any
	// time.
	// +optional
	Progress *Progress `json:"progress,omitempty"`
}

// Role is a group of identical tasks.
//
// +kubebuilder:validation:XValidation:rule="has(self.template.spec)",message="spec.roles[].template.spec is required: a role's tasks need containers"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy == 'Never'",message="spec.roles[].template.spec.restartPolicy must be empty or Never: restarts are decided by spec.roles[].restartPolicy and spec.failurePolicy"
type Role struct {
	// name of the role: a DNS-1035 label, unique within the job.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name,omitempty"`

	// replicas is the number of tasks of the role, 1 when unset. A
	// scalable role (one named in spec.scaling.roles) leaves it unset:
	// spec.scaling.replicas sizes it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// restartPolicy is what happens to a task whose pod ended when no rule
	// of spec.failurePolicy matched it. The pod's own restartPolicy is
	// always Never: the operator replaces pods itself, so every restart is
	// seen and counted.
	//   - Never: a failed task stays failed; the completion policy decides.
	//   - OnFailure: a failed pod is replaced.
	//   - Always: any ended pod, failed or succeeded, is replaced, and
	//     each restart counts like any other.
	//   - ExitCode (the default): a pod killed by a signal a retry survives
	//     (exit 130, 137, 138, 143) or evicted, preempted, OOM-killed or
	//     lost with its node is replaced; any other non-zero exit fails the
	//     job at once.
	// restartScope says what such a restart restarts.
	// +kubebuilder:default=ExitCode
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// restartScope is what a restart that restartPolicy decides restarts:
	//   - Job (the default): a new attempt of the whole job, every pod
	//     recreated and the gang placed afresh. Right where tasks learn
	//     their peers once (the static ranks of PyTorch, TensorFlow,
	//     PaddlePaddle, MPI, JAX), and for a gang-scheduled role, whose lone
	//     replacement would not be placed as part of a gang.
	//   - Task: the task's pod alone. Right for elastic roles, whose world
	//     survives a lost member, and for tasks that do not depend on each
	//     other.
	// A failure rule's action is not affected by it. Either way a restart
	// counts once against spec.failurePolicy.backoffLimit.
	// +kubebuilder:default=Job
	// +optional
	RestartScope RestartScope `json:"restartScope,omitempty"`

	// restartMode is how the role's restarts happen, InPlace or Recreate
	// (as spec.failurePolicy.restartMode says), for this role alone. Unset:
	// the job's. A role whose pods run on a node pool that scales to zero
	// opts out of restarts in place here: the operator's default, Auto,
	// decides from the nodes that exist, and the pool's nodes, once made,
	// may not restart pods in place.
	// +kubebuilder:validation:Enum=InPlace;Recreate
	// +optional
	RestartMode RestartMode `json:"restartMode,omitempty"`

	// gracefulDeletionTimeoutSeconds is, when set, how long a pod of the role
	// may stay terminating after its deletion was asked: then it is
	// force-deleted, so its replacement can start even if its node is gone
	// (availability over consistency: the old process may still run).
	// Unset, pods are never force-deleted and a task never has two pods.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	// +optional
	GracefulDeletionTimeoutSeconds *int64 `json:"gracefulDeletionTimeoutSeconds,omitempty"`

	// topology asks for the role's pods to be placed close together, within
	// one domain of a node label, as spec.scheduling.topology does for the
	// whole job. Kueue carries it out for a job in a LocalQueue, else the
	// Volcano gang backend (a subgroup of the PodGroup per role); other
	// backends place the job as one gang, and the job is refused.
	// +optional
	Topology Topology `json:"topology,omitzero"`

	// dependsOn holds the role's tasks back until other roles have reached a
	// state: a worker role that must not start before its master runs, a
	// trainer that waits for a dataset role to succeed. Only roles listed
	// earlier in spec.roles may be named, so there is never a cycle.
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
	Template corev1.PodTemplateSpec `json:"template,omitzero"`
}

// Dependency names a role and the state it must reach.
type Dependency struct {
	// role is the name of an earlier role of the job.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Role string `json:"role,omitempty"`
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

// RestartScope is what a restart that a role's restartPolicy decides
// restarts.
// +kubebuilder:validation:Enum=Task;Job
type RestartScope string

// Restart scopes.
const (
	// RestartScopeTask replaces the task's pod alone.
	RestartScopeTask RestartScope = "Task"
	// RestartScopeJob starts a new attempt of the whole job.
	RestartScopeJob RestartScope = "Job"
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
	// minSucceeded is how many tasks of the role must succeed for the job
	// to succeed.
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MinSucceeded *int32 `json:"minSucceeded,omitempty"`

	// minFailed is how many tasks of the role must fail for good (no
	// restart left) for the job to fail.
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MinFailed *int32 `json:"minFailed,omitempty"`
}

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
