package importer

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// convertJAXJob converts a Kubeflow Training Operator JAXJob
// (kubeflow.org/v1) into a job of the jax runtime. The program reads the
// variables the JAXJob controller set, COORDINATOR_ADDRESS,
// COORDINATOR_PORT, NUM_PROCESSES and PROCESS_ID: they are defined from
// the runtime's JAX_* ones, so it runs unchanged.
func convertJAXJob(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp.child("runPolicy"))
	if err != nil {
		return spec, err
	}
	roles, err := kfReplicas(s, replicaJob{
		specs: sp.child("jaxReplicaSpecs"), kind: "JAXJob", types: []string{"Worker"}, exitCodeNote: kubeflowExitCode,
	})
	if err != nil {
		return spec, err
	}
	spec.Roles = roles
	jax := &musterv1.JAXRuntime{}
	port := kubeflowPort(&roles[0], "jaxjob-port", musterv1.DefaultJAXPort)
	if port != musterv1.DefaultJAXPort {
		jax.Port = port
	}
	spec.Runtime = &musterv1.Runtime{JAX: jax}
	setEnv(s, replicaPath(s, sp.child("jaxReplicaSpecs"), roles[0].Name).child("template"), &roles[0], []corev1.EnvVar{
		{Name: "COORDINATOR_ADDRESS", Value: podDNSName(roles[0].Name, 0)},
		{Name: "COORDINATOR_PORT", Value: strconv.Itoa(int(port))},
		{Name: "NUM_PROCESSES", Value: "$(JAX_NUM_PROCESSES)"},
		{Name: "PROCESS_ID", Value: "$(JAX_PROCESS_ID)"},
	})
	kubeflowJob(s, &spec, rp)
	return spec, nil
}
