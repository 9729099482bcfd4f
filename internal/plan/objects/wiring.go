package objects

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// wiring is what a runtime adds to one task's pod. Each runtime lives in a
// file of its own (pytorch.go, tensorflow.go, paddle.go, mpi.go, jax.go,
// volcano.go) and only returns this; applyWiring puts it on the pod.
type wiring struct {
	// env goes first in every container, after Muster's own variables.
	env []corev1.EnvVar
	// volumes are added to the pod and mounted in every container.
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
	// waitFor are the peers the task needs before its containers start:
	// "host" must resolve, "host:port" must also accept connections.
	waitFor []string
	// serviceAccount runs the pod under the job's ServiceAccount, unless
	// the template names one.
	serviceAccount string
}

// runtimeWiring is the framework wiring of a task, empty for generic jobs.
func runtimeWiring(t taskRef) wiring {
	rt := t.job.Spec.Runtime
	switch {
	case rt == nil:
		return wiring{}
	case rt.PyTorch != nil:
		return pytorchWiring(t, rt.PyTorch)
	case rt.TensorFlow != nil:
		return tensorflowWiring(t, rt.TensorFlow)
	case rt.Paddle != nil:
		return paddleWiring(t, rt.Paddle)
	case rt.MPI != nil:
		return mpiWiring(t, rt.MPI)
	case rt.JAX != nil:
		return jaxWiring(t, rt.JAX)
	case rt.VolcanoJob != nil:
		return volcanoWiring(t, rt.VolcanoJob)
	}
	return wiring{}
}

// applyWiring adds a runtime's volumes, mounts, service account and wait
// step to a pod. The env is prepended with Muster's own by the caller.
func applyWiring(w wiring, spec *corev1.PodSpec) {
	spec.Volumes = append(spec.Volumes, w.volumes...)
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = append(cs[i].VolumeMounts, w.mounts...)
		}
	}
	if w.serviceAccount != "" && spec.ServiceAccountName == "" {
		spec.ServiceAccountName = w.serviceAccount
	}
	if len(w.waitFor) > 0 && len(spec.Containers) > 0 {
		spec.InitContainers = append([]corev1.Container{waitForPeers(&spec.Containers[0], w.waitFor)}, spec.InitContainers...)
	}
}

// roleHosts are the DNS names of every task of a role, in index order.
func roleHosts(job *musterv1.TrainingJob, role *musterv1.Role) []string {
	n := topology.Replicas(role)
	out := make([]string, n)
	for i := range n {
		out[i] = PodDNSName(job, role.Name, i)
	}
	return out
}

// withPort appends :port to each host.
func withPort(hosts []string, port int32) []string {
	out := make([]string, len(hosts))
	p := ":" + strconv.Itoa(int(port))
	for i, h := range hosts {
		out[i] = h + p
	}
	return out
}

// except drops one entry from a list of peers: a task never waits for
// itself.
func except(peers []string, self string) []string {
	out := make([]string, 0, len(peers))
	for _, p := range peers {
		if p != self && !strings.HasPrefix(p, self+":") {
			out = append(out, p)
		}
	}
	return out
}

// fieldEnv is a variable read from the pod's own fields.
func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}

// DesiredRuntimeObjects are the objects besides pods and the Service that
// the job's runtime needs before its pods are made: the Volcano hosts
// ConfigMap, the MPI hostfile ConfigMap, the ServiceAccount, Role and
// RoleBinding of pods that list pods. The MPI SSH Secret is not among
// them: it is made once, before the job's first pod, when the planner asks
// for it (MPISSHSecret). job is the job as topology.Effective returns it.
func DesiredRuntimeObjects(job *musterv1.TrainingJob) []client.Object {
	rt := job.Spec.Runtime
	switch {
	case rt == nil:
		return nil
	case rt.VolcanoJob != nil:
		return []client.Object{volcanoHostsConfigMap(job)}
	case rt.MPI != nil:
		return []client.Object{mpiHostfileConfigMap(job, rt.MPI)}
	case rt.Paddle != nil && rt.Paddle.PeerDiscovery == musterv1.PeerDiscoveryPodList:
		return podReaderRBAC(job)
	}
	return nil
}

// childMeta is the metadata of an object the job owns, named name.
func childMeta(job *musterv1.TrainingJob, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       job.Namespace,
		Labels:          JobLabels(job),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(job)},
	}
}
