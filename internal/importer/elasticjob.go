package importer

import (
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// convertElasticJob converts torchelastic's ElasticJob
// (elastic.pytorch.org/v1alpha1): workers under the elastic launcher
// meeting at the user's etcd.
func convertElasticJob(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp)
	if err != nil {
		return spec, err
	}
	roles, err := torchReplicas(s, replicaJob{
		specs:    sp.child("replicaSpecs"),
		defaults: map[string]musterv1.RestartPolicy{"worker": musterv1.RestartPolicyExitCode},
		extraReplicas: map[string]string{
			"etcd": "the ElasticJob controller never ran an etcd replica: the rendezvous is at spec.rdzvEndpoint",
		},
	})
	if err != nil {
		return spec, err
	}
	minR, err := s.replicas(sp.child("minReplicas"))
	if err != nil {
		return spec, err
	}
	maxR, err := s.replicas(sp.child("maxReplicas"))
	if err != nil {
		return spec, err
	}
	// The controller prepends --rdzv_backend=etcd --rdzv_endpoint to the
	// launcher's arguments; the launcher reads the same as PET_* variables.
	rdzv, err := torchRendezvous(rendezvous{backend: "etcd", endpoint: s.str(sp.child("rdzvEndpoint"))})
	if err != nil {
		return spec, err
	}
	spec.Roles = roles
	spec.Runtime = &musterv1.Runtime{PyTorch: &musterv1.PyTorchRuntime{Elastic: &musterv1.ElasticPolicy{Rendezvous: rdzv}}}
	spec.Scaling = elasticWorld(s, spec.Roles, minR, maxR, sp)
	// The controller fails the job as soon as a worker fails for good.
	for i := range spec.Roles {
		spec.Roles[i].Completion = &musterv1.CompletionPolicy{MinFailed: ptr(int32(1))}
	}
	kubeflowJob(s, &spec, rp)
	return spec, nil
}
