package importer

import (
	"strconv"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// convertKubeDL converts a KubeDL PyTorchJob (training.kubedl.io/v1alpha1),
// elastic or not.
func convertKubeDL(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp)
	if err != nil {
		return spec, err
	}
	roles, err := torchReplicas(s, replicaJob{
		specs:       sp.child("pytorchReplicaSpecs"),
		defaults:    map[string]musterv1.RestartPolicy{"master": musterv1.RestartPolicyExitCode, "worker": musterv1.RestartPolicyOnFailure},
		workerWaits: true, // KubeDL's DAG scheduling, on by default
		extraReplicas: map[string]string{
			"aimaster": "KubeDL's AIMaster drives KubeDL's own elastic protocol, which Muster does not have",
		},
	})
	if err != nil {
		return spec, err
	}
	for i := range roles {
		base := sp.child("pytorchReplicaSpecs", kubedlType(s, roles[i].Name))
		s.drop(base.child("spotReplicaSpec"), "Muster has no spot replicas: give the role's template the spot pool's node selector and tolerations")
		s.drop(base.child("dependOn"), "set by KubeDL itself; the worker role depends on the master here")
	}
	s.drop(sp.child("modelVersion"), "Muster builds no model images after training")
	s.drop(sp.child("cacheBackend"), "Muster makes no dataset caches: mount the data in the templates")
	spec.Roles = roles
	spec.Runtime = torchStatic(roles)
	enabled, err := s.boolean(sp.child("enableElastic"))
	if err != nil {
		return spec, err
	}
	ep := sp.child("elasticPolicy")
	switch {
	case enabled && s.has(ep):
		if err := kubedlElastic(s, &spec, ep); err != nil {
			return spec, err
		}
	case s.has(ep):
		s.drop(ep, "KubeDL trains elastically only with enableElastic: true, and it is not set")
	}
	kubeflowJob(s, &spec, rp)
	return spec, nil
}

// kubedlType is the spelling the document uses for a replica type.
func kubedlType(s *source, role string) string {
	for _, t := range s.keys(path{"spec", "pytorchReplicaSpecs"}) {
		if lowerRole(t) == role {
			return t
		}
	}
	return role
}

// kubedlElastic is KubeDL's torch elastic mode: the workers run under the
// elastic launcher, whose rendezvous flags KubeDL prepends to their
// arguments and Muster passes as PET_* variables.
func kubedlElastic(s *source, spec *musterv1.TrainingJobSpec, ep path) error {
	minR, err := s.replicas(ep.child("minReplicas"))
	if err != nil {
		return err
	}
	maxR, err := s.replicas(ep.child("maxReplicas"))
	if err != nil {
		return err
	}
	rdzv, err := torchRendezvous(rendezvous{backend: s.str(ep.child("rdzvBackend")), endpoint: s.str(ep.child("rdzvEndpoint"))})
	if err != nil {
		return err
	}
	elastic := &musterv1.ElasticPolicy{Rendezvous: rdzv}
	if n, err := s.int32p(ep.child("nProcPerNode")); err != nil {
		return err
	} else if n != nil {
		elastic.NProcPerNode = strconv.Itoa(int(*n))
	}
	s.seen(ep)
	spec.Runtime.PyTorch.Elastic = elastic
	spec.Scaling = elasticWorld(s, spec.Roles, minR, maxR, ep)
	return nil
}
