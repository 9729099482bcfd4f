package v1beta1

// GangBackend names the scheduler that places a job's pods as a gang: all
// of the gang's members at once, or none.
// +kubebuilder:validation:Enum=None;Native;Coscheduling;Volcano
type GangBackend string

// Gang backends.
const (
	// GangNone places each pod on its own, with the default scheduler.
	GangNone GangBackend = "None"
	// GangNative uses the Kubernetes scheduler's own gang scheduling: a
	// scheduling.k8s.io Workload and, per attempt, a PodGroup (feature
	// gates GenericWorkload and GangScheduling).
	GangNative GangBackend = "Native"
	// GangCoscheduling uses the coscheduling plugin of
	// kubernetes-sigs/scheduler-plugins: a scheduling.x-k8s.io PodGroup
	// per attempt and that scheduler's name on every pod.
	GangCoscheduling GangBackend = "Coscheduling"
	// GangVolcano uses the Volcano scheduler: a scheduling.volcano.sh
	// PodGroup per attempt in the job's queue; pods are created only once
	// Volcano has admitted the PodGroup to its queue.
	GangVolcano GangBackend = "Volcano"
)

// Scheduling says how the job's pods are placed: as one gang or one by one,
// through which scheduler, in which queue and at which priority.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(self.backend) || self.backend != 'None' || (!has(self.minAvailable) && !has(self.roles) && !has(self.scheduleTimeoutSeconds))",message="spec.scheduling: minAvailable, roles and scheduleTimeoutSeconds need a gang backend, and backend is None"
// +kubebuilder:validation:XValidation:rule="!has(self.volcanoQueue) || (has(self.backend) && self.backend == 'Volcano')",fieldPath=.volcanoQueue,message="spec.scheduling.volcanoQueue is a Volcano queue and needs backend Volcano (a Kueue LocalQueue is chosen with the kueue.x-k8s.io/queue-name label)"
// +kubebuilder:validation:XValidation:rule="!has(self.roles) || (has(self.backend) && self.backend == 'Volcano')",fieldPath=.roles,message="spec.scheduling.roles (a minimum per role) needs backend Volcano: the other backends gang the job as a whole"
type Scheduling struct {
	// backend is the gang scheduler. Unset, the operator's default applies
	// (its --default-gang-backend flag, None when not set); the backend in force
	// is shown in status.scheduling.backend and does not change for the
	// life of the job.
	// +optional
	Backend GangBackend `json:"backend,omitempty"`

	// minAvailable is how many tasks must be placed together before any of
	// them starts. Default: every task of the fixed roles plus the
	// minReplicas of each scalable role, so an elastic job gangs only its
	// minimum and the tasks above it are placed as room appears. It may
	// not exceed that default: the gang must fit the job at any size it
	// may be scaled to. The rendezvous store pod is never part of the gang.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MinAvailable int32 `json:"minAvailable,omitempty"`

	// roles sets a minimum per role within the gang (Volcano's
	// minTaskMember), e.g. every parameter server and at least one
	// trainer.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Roles []RoleScheduling `json:"roles,omitempty"`

	// scheduleTimeoutSeconds is how long the coscheduling plugin waits for
	// a gang to be complete before it gives the members' places back and
	// tries again later. Only the Coscheduling backend has such a timeout.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	ScheduleTimeoutSeconds int32 `json:"scheduleTimeoutSeconds,omitempty"`

	// volcanoQueue is the Volcano queue of the job's PodGroup ("default"
	// when unset), with backend Volcano. Kueue is separate: a job joins a
	// Kueue LocalQueue by the label kueue.x-k8s.io/queue-name, and
	// status.scheduling.localQueue shows it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	VolcanoQueue string `json:"volcanoQueue,omitempty"`

	// topology asks for all of the job's pods to be placed close together,
	// within one domain of a node label (one block, one rack). It is
	// carried out by Kueue for a job in a LocalQueue (topology-aware
	// scheduling), else by the gang backend: Native takes a Required
	// request, Volcano either mode (its network topology, by the HyperNode
	// tier named after the label). None and Coscheduling cannot honour
	// one, and the job is refused. spec.roles[].topology asks it of one
	// role instead; a job sets one or the other.
	// +optional
	Topology Topology `json:"topology,omitzero"`

	// priorityClassName is copied to every pod of the job (unless a role's
	// template sets its own) and to the gang object where the backend has
	// a priority.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// TopologyMode says how strictly a topology request binds.
// +kubebuilder:validation:Enum=Required;Preferred
type TopologyMode string

// Topology modes.
const (
	// TopologyRequired places every pod in one domain, or none: the job
	// waits until one domain has room for all of them.
	TopologyRequired TopologyMode = "Required"
	// TopologyPreferred packs the pods into as few domains as there is
	// room for, and runs them spread when no single domain has room.
	TopologyPreferred TopologyMode = "Preferred"
)

// Topology asks for pods to be placed within one domain of a node label.
type Topology struct {
	// level is the node label whose value names a domain: nodes with the
	// same value are in the same domain (e.g. cloud.google.com/gce-topology-block,
	// example.com/rack, kubernetes.io/hostname). Kueue takes a level
	// that is one of its Topology's levels, at most 63 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +required
	Level string `json:"level,omitempty"`

	// mode is Required (the default: one domain or wait) or Preferred
	// (packed as tightly as there is room for).
	// +kubebuilder:default=Required
	// +optional
	Mode TopologyMode `json:"mode,omitempty"`
}

// Requested is the request, nil when none is made (no level).
func (t *Topology) Requested() *Topology {
	if t.Level == "" {
		return nil
	}
	return t
}

// RoleScheduling is a role's minimum within the gang.
type RoleScheduling struct {
	// name of a role in spec.roles.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name,omitempty"`

	// minAvailable is how many of the role's tasks must be placed together
	// with the rest of the gang. It may not exceed the role's replicas, or
	// a scalable role's minReplicas.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +required
	MinAvailable int32 `json:"minAvailable,omitempty"`
}

// SchedulingStatus is the gang in force for the current attempt.
type SchedulingStatus struct {
	// backend is the gang backend in force for the job.
	// +optional
	Backend GangBackend `json:"backend,omitempty"`

	// podGroup is the name of the current attempt's gang object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PodGroup string `json:"podGroup,omitempty"`

	// minAvailable is the size of the gang.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MinAvailable int32 `json:"minAvailable,omitempty"`

	// localQueue is the Kueue LocalQueue the job waits in (its
	// kueue.x-k8s.io/queue-name label).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	LocalQueue string `json:"localQueue,omitempty"`

	// workload is the Kueue Workload that stands for the job in its queue.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Workload string `json:"workload,omitempty"`

	// clusterQueue is the ClusterQueue that admitted the job, while it is
	// admitted.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClusterQueue string `json:"clusterQueue,omitempty"`
}
