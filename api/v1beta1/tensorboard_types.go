package v1beta1

import corev1 "k8s.io/api/core/v1"

// TensorBoardPort is the port TensorBoard listens on and its Service
// exposes.
const TensorBoardPort = 6006

// TensorBoardLogDir is where the TensorBoard container finds the job's logs.
// The container's environment has it as MUSTER_TENSORBOARD_LOGDIR.
const TensorBoardLogDir = "/muster/logs"

// TensorBoard is a TensorBoard server run beside the job: a Deployment of
// one pod and a Service, both owned by the job, reading the event files the
// job writes on one of its volumes. The volume must be one that outlives a
// pod and can be mounted by another (a PersistentVolumeClaim, NFS, a host
// path), and it is mounted read-only.
type TensorBoard struct {
	// image runs TensorBoard. On the local cluster's process node the image
	// is ignored and command runs on the host.
	// +kubebuilder:default="tensorflow/tensorflow:2.18.0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// command runs the server, which must listen on port 6006 of all
	// addresses. Default: tensorboard --logdir=/muster/logs --bind_all
	// --port=6006. $(MUSTER_TENSORBOARD_LOGDIR) in it is the log folder.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// logs is where the job writes its event files.
	// +required
	Logs TensorBoardLogs `json:"logs,omitzero"`

	// ttlSecondsAfterFinished removes the TensorBoard this long after the
	// job finished. 0 removes it when the job finishes; unset keeps it as
	// long as the job exists.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// resources of the TensorBoard container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// Enabled is whether the job asks for a TensorBoard: every TensorBoard
// names its log volume.
func (t *TensorBoard) Enabled() bool { return t.Logs.Volume != "" }

// TensorBoardLogs names the folder of the job's event files.
type TensorBoardLogs struct {
	// volume is the name of a volume of the job's pod templates (the first
	// role that has a volume of the name gives its source).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Volume string `json:"volume,omitempty"`

	// subPath is the folder within the volume, relative, without "..";
	// the volume's root when unset.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="spec.tensorboard.logs.subPath must be a relative path without '..'"
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// TensorBoardStatus is where the job's TensorBoard is served; the
// TensorBoardReady condition says whether it is.
type TensorBoardStatus struct {
	// address is the in-cluster URL of its Service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Address string `json:"address,omitempty"`
}
