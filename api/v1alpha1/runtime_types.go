package v1alpha1

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
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +optional
	MasterRole string `json:"masterRole,omitempty"`

	// port is MASTER_PORT, the port rank 0 listens on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=23456
	// +optional
	Port int32 `json:"port,omitempty"`

	// elastic runs the tasks of the scalable roles (spec.scaling.roles)
	// under torchrun's elastic agent, as one world bounded by their
	// minReplicas and maxReplicas.
	// +optional
	Elastic *ElasticPolicy `json:"elastic,omitempty"`
}

// ElasticPolicy configures torchrun elastic training.
type ElasticPolicy struct {
	// rendezvous says where the agents meet. The default, a c10d store in a
	// small pod of the job, survives the loss of any worker.
	// +kubebuilder:default={backend: c10d}
	// +optional
	Rendezvous Rendezvous `json:"rendezvous,omitzero"`

	// maxRestarts is torchrun's --max-restarts: how often the agent restarts
	// its workers in place before it gives up. A scale-down and a lost peer
	// each use one; a scale-up does not.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=3
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// nprocPerNode is torchrun's --nproc-per-node: a number, or "gpu",
	// "cpu" or "auto".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]{0,3}|gpu|cpu|auto)$`
	// +kubebuilder:default="1"
	// +optional
	NProcPerNode string `json:"nprocPerNode,omitempty"`
}

// Rendezvous configures torchrun's rendezvous.
//
// +kubebuilder:validation:MinProperties=1
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
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// port is the port of the c10d rendezvous store.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=29400
	// +optional
	Port int32 `json:"port,omitempty"`
	// lastCallTimeoutSeconds is how long a forming world waits for more
	// agents once it has minReplicas (torch's default is 30 s, which every
	// rescale and recovery pays; Muster's is 5 s).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=5
	// +optional
	LastCallTimeoutSeconds int32 `json:"lastCallTimeoutSeconds,omitempty"`
	// joinTimeoutSeconds bounds how long a world may take to form.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=600
	// +optional
	JoinTimeoutSeconds int32 `json:"joinTimeoutSeconds,omitempty"`
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
