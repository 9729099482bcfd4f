package importer

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// xgboostPort is the port the XGBoostJob controller gave a replica type
// whose container names none.
const xgboostPort int32 = 9999

// convertXGBoostJob converts a Kubeflow Training Operator XGBoostJob
// (kubeflow.org/v1). Its controller set the variables of a static PyTorch
// world (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK from the master up),
// so the job is one of the pytorch runtime, with the master deciding the
// job's end as it did; the workers' addresses that LightGBM reads
// (WORKER_ADDRS, WORKER_PORT) are defined in every container.
func convertXGBoostJob(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp.child("runPolicy"))
	if err != nil {
		return spec, err
	}
	specs := sp.child("xgbReplicaSpecs")
	roles, err := kfReplicas(s, replicaJob{
		specs: specs, kind: "XGBoostJob", types: []string{"Master", "Worker"}, exitCodeNote: kubeflowExitCode,
	})
	if err != nil {
		return spec, err
	}
	master := findRole(roles, "master")
	if master == nil || deref(master.Replicas) != 1 {
		return spec, fmt.Errorf("%s: an XGBoostJob has one Master replica", specs)
	}
	spec.Roles = roles
	spec.Runtime = &musterv1.Runtime{PyTorch: &musterv1.PyTorchRuntime{Port: kubeflowPort(master, "xgboostjob-port", xgboostPort)}}
	if worker := findRole(roles, "worker"); worker != nil && deref(worker.Replicas) > 0 {
		addrs := make([]string, deref(worker.Replicas))
		for i := range addrs {
			addrs[i] = podDNSName(worker.Name, i)
		}
		vars := []corev1.EnvVar{
			{Name: "WORKER_PORT", Value: strconv.Itoa(int(kubeflowPort(worker, "xgboostjob-port", xgboostPort)))},
			{Name: "WORKER_ADDRS", Value: strings.Join(addrs, ",")},
		}
		for i := range roles {
			setEnv(s, replicaPath(s, specs, roles[i].Name).child("template"), &roles[i], vars)
		}
	}
	kubeflowJob(s, &spec, rp)
	return spec, nil
}
