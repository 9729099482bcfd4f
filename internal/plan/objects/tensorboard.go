package objects

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// ComponentTensorBoard is LabelComponent's value on a job's TensorBoard
// objects.
const ComponentTensorBoard = "tensorboard"

// LabelTensorBoard is the label of a TensorBoard's pod, valued with its
// job's name, that its Service selects. The pod carries no job-name label:
// the job's headless Service would publish it as a peer of the tasks.
const LabelTensorBoard = "muster.dev/tensorboard"

// AnnotationTensorBoardHash is the hash of the spec a TensorBoard
// Deployment was built from, so a changed spec.tensorboard is seen without
// comparing defaulted pod templates.
const AnnotationTensorBoardHash = "muster.dev/tensorboard-hash"

// EnvTensorBoardLogDir is the log folder in the TensorBoard container.
const EnvTensorBoardLogDir = "MUSTER_TENSORBOARD_LOGDIR"

// logsVolume is the TensorBoard pod's name for the job's log volume.
const logsVolume = "logs"

// TensorBoardName names a job's TensorBoard Deployment and Service.
func TensorBoardName(job *musterv1.TrainingJob) string { return job.Name + "-tensorboard" }

// TensorBoardAddress is the in-cluster URL of a job's TensorBoard.
func TensorBoardAddress(job *musterv1.TrainingJob) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", TensorBoardName(job), job.Namespace, musterv1.TensorBoardPort)
}

// TensorBoardVolume finds the source of the volume spec.tensorboard.logs
// names, in the first role whose pod template has it.
func TensorBoardVolume(spec *musterv1.TrainingJobSpec) (corev1.VolumeSource, bool) {
	if !spec.TensorBoard.Enabled() {
		return corev1.VolumeSource{}, false
	}
	for _, role := range spec.Roles {
		for _, v := range role.Template.Spec.Volumes {
			if v.Name == spec.TensorBoard.Logs.Volume {
				return v.VolumeSource, true
			}
		}
	}
	return corev1.VolumeSource{}, false
}

// defaultTensorBoardCommand serves the mounted log folder on every address.
var defaultTensorBoardCommand = []string{"tensorboard", "--logdir=" + musterv1.TensorBoardLogDir, "--bind_all",
	fmt.Sprintf("--port=%d", musterv1.TensorBoardPort)}

// DesiredTensorBoard builds the Deployment and Service of a job's
// TensorBoard. ok is false when the job asks for none or its log volume
// is missing (validation refuses such a job).
func DesiredTensorBoard(job *musterv1.TrainingJob) (*appsv1.Deployment, *corev1.Service, bool) {
	tb := &job.Spec.TensorBoard
	source, ok := TensorBoardVolume(&job.Spec)
	if !ok {
		return nil, nil, false
	}
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:            TensorBoardName(job),
			Namespace:       job.Namespace,
			Labels:          map[string]string{musterv1.LabelJobName: job.Name, musterv1.LabelComponent: ComponentTensorBoard},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(job)},
		}
	}
	selector := map[string]string{LabelTensorBoard: job.Name}
	podLabels := map[string]string{LabelTensorBoard: job.Name, musterv1.LabelComponent: ComponentTensorBoard}
	command := tb.Command
	if len(command) == 0 {
		command = defaultTensorBoardCommand
	}
	port := intstr.FromInt32(musterv1.TensorBoardPort)
	pod := corev1.PodSpec{
		// The server needs no API access.
		AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{
			Name:    ComponentTensorBoard,
			Image:   tb.Image,
			Command: append([]string(nil), command...),
			Env:     []corev1.EnvVar{{Name: EnvTensorBoardLogDir, Value: musterv1.TensorBoardLogDir}},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: musterv1.TensorBoardPort,
				Protocol: corev1.ProtocolTCP}},
			VolumeMounts: []corev1.VolumeMount{{Name: logsVolume, MountPath: musterv1.TensorBoardLogDir,
				SubPath: tb.Logs.SubPath, ReadOnly: true}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}},
				PeriodSeconds: 2,
			},
		}},
		Volumes: []corev1.Volume{{Name: logsVolume, VolumeSource: *source.DeepCopy()}},
	}
	if tb.Resources != nil {
		pod.Containers[0].Resources = *tb.Resources.DeepCopy()
	}
	// Mounted read-only: TensorBoard never writes to the job's logs.
	if c := pod.Volumes[0].PersistentVolumeClaim; c != nil {
		c.ReadOnly = true
	}
	dep := &appsv1.Deployment{
		ObjectMeta: meta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// One reader of a volume at a time: a ReadWriteOnce claim on
			// another node would keep a surged pod pending for ever.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       pod,
			},
		},
	}
	dep.Annotations = map[string]string{AnnotationTensorBoardHash: hashOf(dep.Spec)}
	svc := &corev1.Service{
		ObjectMeta: meta(),
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports: []corev1.ServicePort{{Name: "http", Port: musterv1.TensorBoardPort, TargetPort: port,
				Protocol: corev1.ProtocolTCP}},
		},
	}
	return dep, svc, true
}

// hashOf is a short digest of v's JSON form.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("hashing a TensorBoard spec: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
