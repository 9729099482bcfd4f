package importer

import (
	"fmt"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// paddlePort is the port the PaddleJob controller gave the master when
// its container names none.
const paddlePort int32 = 36543

// convertPaddleJob converts a Kubeflow Training Operator PaddleJob
// (kubeflow.org/v1) into a job of the paddle runtime with launcher Launch,
// which sets the variables that controller set for
// paddle.distributed.launch. With a Master replica spec the job is in
// parameter-server mode, the masters being its servers and the workers its
// trainers; without one it is collective.
func convertPaddleJob(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp.child("runPolicy"))
	if err != nil {
		return spec, err
	}
	specs := sp.child("paddleReplicaSpecs")
	roles, err := kfReplicas(s, replicaJob{
		specs: specs, kind: "PaddleJob", types: []string{"Master", "Worker"},
		defaults:     map[string]musterv1.RestartPolicy{"master": musterv1.RestartPolicyOnFailure, "worker": musterv1.RestartPolicyOnFailure},
		exitCodeNote: kubeflowExitCode,
	})
	if err != nil {
		return spec, err
	}
	worker := findRole(roles, "worker")
	if worker == nil {
		return spec, fmt.Errorf("%s: a PaddleJob needs Worker replicas, its trainers", specs)
	}
	spec.Roles = roles
	paddle := &musterv1.PaddleRuntime{Launcher: musterv1.PaddleLaunch, TrainerRole: "worker", Mode: musterv1.PaddleCollective}
	// The master's port: task 0 of the masters serves it, or of the
	// workers without masters.
	first := worker
	if master := findRole(roles, "master"); master != nil {
		paddle.Mode, paddle.PServerRole, first = musterv1.PaddleParameterServer, "master", master
	}
	paddle.Port = kubeflowPort(first, "master", paddlePort)
	spec.Runtime = &musterv1.Runtime{Paddle: paddle}
	s.drop(sp.child("elasticPolicy"), "the Training Operator never ran a PaddleJob elastically (no HorizontalPodAutoscaler, no elastic launcher): "+
		"the job has its replicas")
	kubeflowJob(s, &spec, rp)
	return spec, nil
}
