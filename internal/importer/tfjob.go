package importer

import (
	"fmt"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// convertTFJob converts a Kubeflow Training Operator TFJob
// (kubeflow.org/v1) into a job of the tensorflow runtime: roles named
// after the replica types are their own TensorFlow task types, so
// TF_CONFIG lists the same cluster.
func convertTFJob(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp.child("runPolicy"))
	if err != nil {
		return spec, err
	}
	specs := sp.child("tfReplicaSpecs")
	roles, err := kfReplicas(s, replicaJob{
		specs: specs, kind: "TFJob", types: []string{"Chief", "Master", "PS", "Worker", "Evaluator"},
		exitCodeNote: kubeflowExitCode,
	})
	if err != nil {
		return spec, err
	}
	spec.Roles = roles
	tf := &musterv1.TensorFlowRuntime{}
	// Every task of a Muster job listens on one port; Kubeflow read each
	// replica type's own.
	var port int32
	for i := range roles {
		p := kubeflowPort(&roles[i], "tfjob-port", musterv1.DefaultTensorFlowPort)
		switch {
		case i == 0:
			port = p
		case p != port:
			s.mention(replicaPath(s, specs, roles[i].Name).child("template"), fmt.Sprintf(
				"its tfjob-port is %d, the %s role's %d: TF_CONFIG names every task at runtime.tensorflow.port, %d",
				p, roles[0].Name, port, port))
		}
	}
	if port != musterv1.DefaultTensorFlowPort {
		tf.Port = port
	}
	spec.Runtime = &musterv1.Runtime{TensorFlow: tf}
	tfSuccess(s, sp, roles)
	if dynamic, err := s.boolean(sp.child("enableDynamicWorker")); err != nil {
		return spec, err
	} else if dynamic {
		s.note(sp.child("enableDynamicWorker"), "Muster's TF_CONFIG always lists every worker, so workers cannot join a running cluster; "+
			"a new attempt starts with the cluster it then has")
	}
	kubeflowJob(s, &spec, rp)
	return spec, nil
}

// tfSuccess reads the success policy. Muster's TensorFlow preset is
// Kubeflow's with a chief (the chief decides) and its AllWorkers without
// one; Kubeflow's default without a chief, worker 0 alone, is reported.
func tfSuccess(s *source, sp path, roles []musterv1.Role) {
	p := sp.child("successPolicy")
	policy := s.str(p)
	chief := findRole(roles, "chief") != nil || findRole(roles, "master") != nil
	worker := findRole(roles, "worker")
	if chief || worker == nil || deref(worker.Replicas) < 2 || policy == "AllWorkers" {
		return
	}
	why := "Kubeflow succeeds a TFJob without a chief when worker 0 has; Muster waits for every worker, as successPolicy AllWorkers does " +
		"(give the worker role completion.minSucceeded to end it sooner)"
	if s.has(p) {
		s.note(p, why)
		return
	}
	s.mention(replicaPath(s, sp.child("tfReplicaSpecs"), "worker"), why)
}
