package importer

import (
	"fmt"
	"strconv"
	"strings"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// convertPyTorchJob converts a Kubeflow Training Operator PyTorchJob
// (kubeflow.org/v1), elastic or not.
func convertPyTorchJob(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp.child("runPolicy"))
	if err != nil {
		return spec, err
	}
	roles, err := torchReplicas(s, replicaJob{
		specs: sp.child("pytorchReplicaSpecs"),
		defaults: map[string]musterv1.RestartPolicy{
			"master": musterv1.RestartPolicyOnFailure, "worker": musterv1.RestartPolicyOnFailure},
		exitCodeNote: kubeflowExitCode,
	})
	if err != nil {
		return spec, err
	}
	spec.Roles = roles
	spec.Runtime = torchStatic(roles)
	nproc := s.str(sp.child("nprocPerNode"))
	if ep := sp.child("elasticPolicy"); s.has(ep) {
		if err := kubeflowElastic(s, &spec, ep, nproc); err != nil {
			return spec, err
		}
	} else if nproc != "" && nproc != "1" {
		s.note(sp.child("nprocPerNode"), "a static PyTorch world in Muster runs one process per pod (WORLD_SIZE counts pods): "+
			"run the program under torchrun with an elastic policy whose bounds are equal to keep several")
	}
	kubeflowJob(s, &spec, rp)
	return spec, nil
}

// kubeflowElastic is the Training Operator's elastic policy: torchrun's
// flags as PET_* variables, and the worker role scalable between the
// bounds.
func kubeflowElastic(s *source, spec *musterv1.TrainingJobSpec, ep path, nproc string) error {
	minR, err := s.replicas(ep.child("minReplicas"))
	if err != nil {
		return err
	}
	maxR, err := s.replicas(ep.child("maxReplicas"))
	if err != nil {
		return err
	}
	r := rendezvous{backend: s.str(ep.child("rdzvBackend"))}
	port, err := s.int32p(ep.child("rdzvPort"))
	if err != nil {
		return err
	}
	if host := s.str(ep.child("rdzvHost")); host != "" {
		r.endpoint = host
		if port != nil {
			r.endpoint = fmt.Sprintf("%s:%d", host, *port)
		}
	} else {
		r.port = port
	}
	rdzv, err := torchRendezvous(r)
	if err != nil {
		return err
	}
	s.drop(ep.child("rdzvId"), "Muster's rendezvous id is the job's UID, unique to every job")
	s.drop(ep.child("standalone"), "Muster's job always has a rendezvous of its own: standalone is implied")
	s.drop(ep.child("metrics"), "Muster makes no HorizontalPodAutoscaler: point one at the TrainingJob's /scale subresource, "+
		"or use spec.scaling.autoscaling")
	for i := range s.list(ep.child("rdzvConf")) {
		cp := ep.child("rdzvConf", i)
		key, value := s.str(cp.child("key")), s.str(cp.child("value"))
		if err := rendezvousConf(&rdzv, key, value); err != nil {
			s.dropped = append(s.dropped, Dropped{Path: cp.String(), Reason: err.Error()})
		}
	}
	s.seen(ep.child("rdzvConf"))
	elastic := &musterv1.ElasticPolicy{Rendezvous: rdzv}
	if elastic.MaxRestarts, err = s.int32p(ep.child("maxRestarts")); err != nil {
		return err
	}
	if n, err := s.int32p(ep.child("nProcPerNode")); err != nil {
		return err
	} else if n != nil {
		elastic.NProcPerNode = strconv.Itoa(int(*n))
	}
	if nproc != "" {
		elastic.NProcPerNode = nproc
	}
	s.seen(ep)
	spec.Runtime.PyTorch.Elastic = elastic
	spec.Scaling = elasticWorld(s, spec.Roles, minR, maxR, ep)
	return nil
}

// rendezvousConf takes the rendezvous settings Muster has a field for.
func rendezvousConf(r *musterv1.Rendezvous, key, value string) error {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	switch {
	case key != "last_call_timeout" && key != "join_timeout":
		return fmt.Errorf("only last_call_timeout and join_timeout have TrainingJob fields: set PET_RDZV_CONF in the template for %s", key)
	case err != nil || n < 1:
		return fmt.Errorf("%s: %q is not a number of seconds", key, value)
	case key == "last_call_timeout":
		r.LastCallTimeoutSeconds = int32(n)
	default:
		r.JoinTimeoutSeconds = int32(n)
	}
	return nil
}
