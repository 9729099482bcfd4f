package objects

import (
	"cmp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// volcanoHostsEnvMax is the largest role whose hosts go into
// VC_<ROLE>_HOSTS. A larger one is in the hosts file only: thousands of
// names in one variable come near the kernel's limit on one argument
// (128 KiB) and swell every pod object.
const volcanoHostsEnvMax = 1000

const volcanoVolume = "muster-volcano-hosts"

// VolcanoHostsConfigMapName is the name of the ConfigMap with the job's
// hosts files, Volcano's own name for it.
func VolcanoHostsConfigMapName(job *musterv1.TrainingJob) string { return job.Name + "-svc" }

// volcanoEnvName is a role's name as Volcano puts it into variable names:
// upper case, '-' as '_'.
func volcanoEnvName(role string) string {
	return strings.ToUpper(strings.ReplaceAll(role, "-", "_"))
}

// volcanoWiring is what Volcano's env and svc plugins give a pod: the task
// index twice (VC_ and the older VK_), every role's hosts and size, and the
// hosts files. Volcano's hosts are <pod>.<job>, which Muster's names are
// too (the job's Service is named after it). Peers are not waited for: a
// job written for Volcano expects no wait and may not need all its roles.
func volcanoWiring(t taskRef, v *musterv1.VolcanoJobRuntime) wiring {
	idx := strconv.Itoa(int(t.index))
	env := []corev1.EnvVar{
		{Name: "VC_TASK_INDEX", Value: idx},
		{Name: "VK_TASK_INDEX", Value: idx},
	}
	for i := range t.job.Spec.Roles {
		r := &t.job.Spec.Roles[i]
		name := volcanoEnvName(r.Name)
		if topology.Replicas(r) <= volcanoHostsEnvMax {
			env = append(env, corev1.EnvVar{Name: "VC_" + name + "_HOSTS", Value: strings.Join(roleHosts(t.job, r), ",")})
		}
		env = append(env, corev1.EnvVar{Name: "VC_" + name + "_NUM", Value: strconv.Itoa(int(topology.Replicas(r)))})
	}
	return wiring{
		env: env,
		volumes: []corev1.Volume{{Name: volcanoVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: VolcanoHostsConfigMapName(t.job)}},
		}}},
		mounts: []corev1.VolumeMount{{Name: volcanoVolume, MountPath: cmp.Or(v.MountPath, "/etc/volcano"), ReadOnly: true}},
	}
}

// volcanoHostsConfigMap holds <role>.host for every role: its tasks' hosts,
// one a line and no newline after the last, byte for byte what Volcano
// writes.
func volcanoHostsConfigMap(job *musterv1.TrainingJob) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: childMeta(job, VolcanoHostsConfigMapName(job)), Data: map[string]string{}}
	for i := range job.Spec.Roles {
		r := &job.Spec.Roles[i]
		cm.Data[r.Name+".host"] = strings.Join(roleHosts(job, r), "\n")
	}
	return cm
}
