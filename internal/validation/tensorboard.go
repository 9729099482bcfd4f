package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// TensorBoard checks spec.tensorboard: its log volume must be a volume of
// the job that another pod can read. It is not part of Spec, which the
// planner also runs to fail a job that slipped past admission: a wrong
// TensorBoard leaves the TensorBoard unmade (its condition says why), never
// fails the training.
func TensorBoard(spec *musterv1.TrainingJobSpec) field.ErrorList {
	tb := &spec.TensorBoard
	if !tb.Enabled() {
		return nil
	}
	path := field.NewPath("spec", "tensorboard", "logs", "volume")
	source, ok := objects.TensorBoardVolume(spec)
	if !ok {
		return field.ErrorList{field.Invalid(path, tb.Logs.Volume,
			"names no volume of spec.roles[].template.spec.volumes: name the volume the job writes its event files to")}
	}
	if kind := podLocalVolume(source); kind != "" {
		return field.ErrorList{field.Invalid(path, tb.Logs.Volume, fmt.Sprintf(
			"names a volume of kind %s, which lives in one pod: TensorBoard runs in a pod of its own and needs a volume it can share (a PersistentVolumeClaim, NFS, a host path)", kind))}
	}
	return nil
}

// podLocalVolume names the kind of a volume no other pod can read, or "".
func podLocalVolume(v corev1.VolumeSource) string {
	switch {
	case v.EmptyDir != nil:
		return "emptyDir"
	case v.Ephemeral != nil:
		return "ephemeral"
	// The kubelet writes these, read-only to the job.
	case v.ConfigMap != nil:
		return "configMap"
	case v.Secret != nil:
		return "secret"
	case v.DownwardAPI != nil:
		return "downwardAPI"
	case v.Projected != nil:
		return "projected"
	}
	return ""
}
