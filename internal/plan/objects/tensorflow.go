package objects

import (
	"cmp"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// tfConfig is TF_CONFIG as TensorFlow reads it.
type tfConfig struct {
	Cluster map[string][]string `json:"cluster"`
	Task    tfTask              `json:"task"`
	// Environment "cloud" is what TensorFlow's estimator-era code expects
	// of a cluster it does not run itself.
	Environment string `json:"environment"`
}

type tfTask struct {
	Type  string `json:"type"`
	Index int32  `json:"index"`
}

// TFTaskType is the TensorFlow task type of a role: its entry in
// taskTypes, else its own name.
func TFTaskType(tf *musterv1.TensorFlowRuntime, role string) string {
	for _, t := range tf.TaskTypes {
		if t.Role == role {
			return string(t.Type)
		}
	}
	return role
}

// tensorflowWiring sets TF_CONFIG. Roles of one task type form one list in
// spec order, so a type may span roles (workers on two node pools). An
// evaluator is told the cluster but is not part of it: TensorFlow's
// training never waits for it.
func tensorflowWiring(t taskRef, tf *musterv1.TensorFlowRuntime) wiring {
	port := cmp.Or(tf.Port, musterv1.DefaultTensorFlowPort)
	cluster := map[string][]string{}
	var evaluators int32
	task := tfTask{Type: TFTaskType(tf, t.role.Name)}
	for i := range t.job.Spec.Roles {
		r := &t.job.Spec.Roles[i]
		typ := TFTaskType(tf, r.Name)
		if typ == string(musterv1.TFEvaluator) {
			if r.Name == t.role.Name {
				task.Index = evaluators + t.index
			}
			evaluators += int32(len(roleHosts(t.job, r)))
			continue
		}
		if r.Name == t.role.Name {
			task.Index = int32(len(cluster[typ])) + t.index
		}
		cluster[typ] = append(cluster[typ], withPort(roleHosts(t.job, r), port)...)
	}
	raw, err := json.Marshal(tfConfig{Cluster: cluster, Task: task, Environment: "cloud"})
	if err != nil {
		// A map of strings to string lists always encodes.
		panic(err)
	}
	var peers []string
	for _, r := range t.job.Spec.Roles {
		if TFTaskType(tf, r.Name) != string(musterv1.TFEvaluator) {
			peers = append(peers, roleHosts(t.job, &r)...)
		}
	}
	return wiring{
		env: []corev1.EnvVar{
			{Name: "TF_CONFIG", Value: string(raw)},
			{Name: "PYTHONUNBUFFERED", Value: "1"},
		},
		// Every member of the cluster may talk to every other; an
		// evaluator reads checkpoints and needs none of them.
		waitFor: peersOf(task.Type != string(musterv1.TFEvaluator), peers, PodDNSName(t.job, t.role.Name, t.index)),
	}
}

// peersOf is peers without self when the task needs them, else none.
func peersOf(needs bool, peers []string, self string) []string {
	if !needs {
		return nil
	}
	return except(peers, self)
}
