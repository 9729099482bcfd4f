package v1beta1

// Runtime selects the framework wiring of a job: exactly one framework.
//
// +kubebuilder:validation:XValidation:rule="[has(self.pytorch), has(self.tensorflow), has(self.paddle), has(self.mpi), has(self.jax), has(self.volcanoJob)].filter(x, x).size() == 1",message="spec.runtime must set exactly one of pytorch, tensorflow, paddle, mpi, jax and volcanoJob"
type Runtime struct {
	// pytorch wires the job for torch.distributed: MASTER_ADDR, MASTER_PORT,
	// RANK and WORLD_SIZE for a static world, or torchrun's PET_* settings
	// for an elastic one.
	// +optional
	PyTorch *PyTorchRuntime `json:"pytorch,omitempty"`

	// tensorflow sets TF_CONFIG: the cluster of every role's tasks by their
	// TensorFlow task type, and the task's own type and index.
	// +optional
	TensorFlow *TensorFlowRuntime `json:"tensorflow,omitempty"`

	// paddle sets the PADDLE_* variables of a PaddlePaddle job, in
	// parameter-server or collective mode.
	// +optional
	Paddle *PaddleRuntime `json:"paddle,omitempty"`

	// mpi runs a launcher and workers: a hostfile with slots, an SSH key
	// pair of the job, and a launcher that starts only once the workers
	// run, so that mpirun works unchanged.
	// +optional
	MPI *MPIRuntime `json:"mpi,omitempty"`

	// jax sets the coordinator address, process id and process count of
	// jax.distributed.
	// +optional
	JAX *JAXRuntime `json:"jax,omitempty"`

	// volcanoJob wires the job as a Volcano Job's env and svc plugins do,
	// so that a job written for Volcano runs unchanged: VC_TASK_INDEX,
	// VK_TASK_INDEX, VC_<ROLE>_HOSTS, VC_<ROLE>_NUM and the files
	// <role>.host under mountPath. It says nothing about scheduling: to
	// have Volcano's scheduler place the job, set spec.scheduling.backend:
	// Volcano.
	// +optional
	VolcanoJob *VolcanoJobRuntime `json:"volcanoJob,omitempty"`
}

// TensorFlowRuntime configures TF_CONFIG.
type TensorFlowRuntime struct {
	// port is the port every task's server listens on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=2222
	// +optional
	Port int32 `json:"port,omitempty"`

	// taskTypes maps roles to TensorFlow task types. A role not listed is
	// its own task type, so roles named chief, worker, ps and evaluator
	// need no entry.
	// +listType=map
	// +listMapKey=role
	// +kubebuilder:validation:MaxItems=16
	// +optional
	TaskTypes []TensorFlowTaskType `json:"taskTypes,omitempty"`
}

// TensorFlowTaskType names the TensorFlow task type of a role.
type TensorFlowTaskType struct {
	// role is the name of a role of the job.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Role string `json:"role,omitempty"`

	// type is the role's task type in TF_CONFIG. An evaluator is told the
	// cluster but is not part of it, as TensorFlow expects.
	// +required
	Type TensorFlowTaskKind `json:"type,omitempty"`
}

// TensorFlowTaskKind is a TensorFlow task type, spelled as TF_CONFIG
// spells it.
// +kubebuilder:validation:Enum=chief;master;worker;ps;evaluator
type TensorFlowTaskKind string

// TensorFlow task types.
const (
	TFChief     TensorFlowTaskKind = "chief"
	TFMaster    TensorFlowTaskKind = "master"
	TFWorker    TensorFlowTaskKind = "worker"
	TFPS        TensorFlowTaskKind = "ps"
	TFEvaluator TensorFlowTaskKind = "evaluator"
)

// PaddleRuntime configures the PADDLE_* variables.
type PaddleRuntime struct {
	// mode is ParameterServer (the default: pserver and trainer roles) or
	// Collective (trainers only, which exchange gradients among
	// themselves).
	// +kubebuilder:default=ParameterServer
	// +optional
	Mode PaddleMode `json:"mode,omitempty"`

	// port is PADDLE_PORT: the port every pserver, and in collective mode
	// every trainer, listens on; with launcher Launch, the master's port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=30236
	// +optional
	Port int32 `json:"port,omitempty"`

	// pserverRole names the parameter servers' role in ParameterServer
	// mode.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:default=pserver
	// +optional
	PServerRole string `json:"pserverRole,omitempty"`

	// trainerRole names the trainers' role.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:default=trainer
	// +optional
	TrainerRole string `json:"trainerRole,omitempty"`

	// peerDiscovery says how the pods learn their peers:
	//   - Environment (the default): from the variables Muster sets.
	//   - PodList: the pods also list the pods of their namespace through
	//     the Kubernetes API, as images built for paddle_k8s do (they wait
	//     for their peers to run and take the endpoints from the pods).
	//     Muster then makes a ServiceAccount, a Role allowing get and list
	//     on pods and a RoleBinding for the job, and runs its pods under
	//     that ServiceAccount unless their template names one.
	// +kubebuilder:default=Environment
	// +optional
	PeerDiscovery PeerDiscovery `json:"peerDiscovery,omitempty"`

	// launcher says which Paddle launcher the tasks run, and so which
	// variables they get:
	//   - Fleet (the default): the endpoint lists that paddle_k8s and
	//     fleet's role makers read (TRAINING_ROLE, PADDLE_PORT,
	//     PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINER_ENDPOINTS,
	//     PADDLE_TRAINER_ID, ...).
	//   - Launch: what python -m paddle.distributed.launch reads, as
	//     Kubeflow's PaddleJob sets it: PADDLE_MASTER, the address of task 0
	//     of the pserver role (of the trainer role in Collective mode) at
	//     port, which that task serves on its pod IP; PADDLE_NNODES;
	//     PADDLE_JOB_ID; and in ParameterServer mode PADDLE_SERVER_NUM=1 on
	//     the pservers and PADDLE_TRAINER_NUM=1 on the trainers. The
	//     launchers find each other through the master.
	// +kubebuilder:default=Fleet
	// +optional
	Launcher PaddleLauncher `json:"launcher,omitempty"`
}

// PaddleLauncher is the launcher a PaddlePaddle job's tasks run.
// +kubebuilder:validation:Enum=Fleet;Launch
type PaddleLauncher string

// Paddle launchers.
const (
	PaddleFleet  PaddleLauncher = "Fleet"
	PaddleLaunch PaddleLauncher = "Launch"
)

// PaddleMode is how a PaddlePaddle job trains.
// +kubebuilder:validation:Enum=ParameterServer;Collective
type PaddleMode string

// PaddlePaddle modes.
const (
	PaddleParameterServer PaddleMode = "ParameterServer"
	PaddleCollective      PaddleMode = "Collective"
)

// PeerDiscovery says how a job's pods learn their peers.
// +kubebuilder:validation:Enum=Environment;PodList
type PeerDiscovery string

// Peer discovery methods.
const (
	PeerDiscoveryEnvironment PeerDiscovery = "Environment"
	PeerDiscoveryPodList     PeerDiscovery = "PodList"
)

// MPIRuntime configures an MPI job.
type MPIRuntime struct {
	// launcherRole names the role that runs mpirun. It must be the last
	// role of spec.roles: every other role is a worker role, and the
	// launcher starts only once every worker runs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:default=launcher
	// +optional
	LauncherRole string `json:"launcherRole,omitempty"`

	// slotsPerWorker is each worker's number of slots in the hostfile: how
	// many processes mpirun starts on it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +kubebuilder:default=1
	// +optional
	SlotsPerWorker int32 `json:"slotsPerWorker,omitempty"`

	// implementation says which hostfile syntax and variables to write:
	// OpenMPI (the default; "host slots=N") or MPICH, which Intel MPI
	// shares ("host:N").
	// +kubebuilder:default=OpenMPI
	// +optional
	Implementation MPIImplementation `json:"implementation,omitempty"`

	// sshMountPath is where the job's SSH key pair, authorized_keys and
	// client config are mounted in every pod: the home .ssh directory of
	// the user the containers run as.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[^:]*$`
	// +kubebuilder:default=/root/.ssh
	// +optional
	SSHMountPath string `json:"sshMountPath,omitempty"`
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

// MPIImplementation is an MPI implementation.
// +kubebuilder:validation:Enum=OpenMPI;MPICH
type MPIImplementation string

// MPI implementations.
const (
	MPIOpenMPI MPIImplementation = "OpenMPI"
	MPIMPICH   MPIImplementation = "MPICH"
)

// JAXRuntime configures jax.distributed.
type JAXRuntime struct {
	// port is the coordinator's port, on task 0 of the first role.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=6666
	// +optional
	Port int32 `json:"port,omitempty"`
}

// VolcanoJobRuntime configures the wiring of a Volcano Job.
type VolcanoJobRuntime struct {
	// mountPath is where the hosts files <role>.host are mounted in every
	// container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[^:]*$`
	// +kubebuilder:default=/etc/volcano
	// +optional
	MountPath string `json:"mountPath,omitempty"`
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

	// maxRestarts is torchrun's --max-restarts: how often each agent
	// restarts its worker processes in place, inside its pod, before it
	// gives up. A scale-down and a lost peer each use one; a scale-up does
	// not. These restarts are torchrun's own: Muster does not see them, and
	// they count neither in status.restarts nor against
	// spec.failurePolicy.backoffLimit. When an agent gives up its pod fails,
	// and that is one Muster restart, charged like any other.
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
