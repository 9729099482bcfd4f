package importer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// sshd is what a worker without a command runs: Muster's launcher reaches
// the workers over SSH. The job's keys come from a read-only Secret
// volume, which StrictModes would refuse for any user but the volume's
// owner.
var sshd = []string{"/usr/sbin/sshd", "-D", "-e", "-o", "StrictModes=no"}

// convertMPIJobV2 converts an MPI Operator MPIJob (kubeflow.org/v2beta1)
// into a job of the mpi runtime, which works as that operator does: a
// hostfile of the workers, an SSH key pair of the job, and a launcher
// that runs mpirun once the workers run.
func convertMPIJobV2(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	sp := path{"spec"}
	spec, rp, err := mpiJob(s, map[string]musterv1.RestartPolicy{"launcher": musterv1.RestartPolicyOnFailure})
	if err != nil {
		return spec, err
	}
	mpi := spec.Runtime.MPI
	if mpi.Implementation, err = mpiImplementation(s, sp.child("mpiImplementation")); err != nil {
		return spec, err
	}
	mpi.SSHMountPath = s.str(sp.child("sshAuthMountPath"))
	if asWorker, err := s.boolean(sp.child("runLauncherAsWorker")); err != nil {
		return spec, err
	} else if asWorker {
		s.mention(sp.child("runLauncherAsWorker"), "Muster's MPI launcher runs mpirun only: it is not in the hostfile, so the job has one host fewer")
	}
	if policy := s.str(sp.child("launcherCreationPolicy")); policy == "AtStartup" {
		s.mention(sp.child("launcherCreationPolicy"), "Muster starts the launcher once every worker runs and answers on its SSH port, as WaitForWorkersReady")
	}
	// The launcher was a batch Job, whose backoffLimit defaults to 6.
	if !s.has(sp.child("runPolicy", "backoffLimit")) {
		rp.backoffLimit = ptr(int32(6))
	}
	kubeflowJob(s, &spec, rp)
	return spec, nil
}

// convertMPIJobV1 converts a Kubeflow Training Operator MPIJob
// (kubeflow.org/v1). That operator reached the workers with kubectl exec;
// Muster's launcher does over SSH, as the MPI Operator's v2 does, so the
// workers must run an SSH server: a worker without a command (which v1 ran
// as sleep) runs sshd.
func convertMPIJobV1(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	sp := path{"spec"}
	spec, rp, err := mpiJob(s, nil)
	if err != nil {
		return spec, err
	}
	if !s.has(sp.child("runPolicy", "cleanPodPolicy")) {
		if err := cleanPodPolicy(s, sp.child("cleanPodPolicy"), &rp.run.CleanPodPolicy); err != nil {
			return spec, err
		}
	}
	s.drop(sp.child("cleanPodPolicy"), "spec.runPolicy.cleanPodPolicy is set and wins")
	s.drop(sp.child("mainContainer"), "named the container kubectl exec ran in; Muster's launcher reaches each worker's sshd")
	worker := findRole(spec.Roles, "worker")
	if worker != nil {
		wp := replicaPath(s, sp.child("mpiReplicaSpecs"), "worker").child("template")
		if c := &worker.Template.Spec.Containers; len(*c) > 0 && len((*c)[0].Command) == 0 {
			(*c)[0].Command = sshd
			s.mention(wp, "the workers ran sleep and mpirun reached them with kubectl exec; Muster's launcher reaches them over SSH, "+
				"so the first container runs /usr/sbin/sshd -D -e -o StrictModes=no: its image needs an SSH server")
		} else {
			s.mention(wp, "mpirun reached the workers with kubectl exec; Muster's launcher reaches them over SSH, so their command must run an SSH server")
		}
	}
	if launcher := findRole(spec.Roles, "launcher"); launcher != nil && usesGPUs(launcher.Template) {
		s.mention(replicaPath(s, sp.child("mpiReplicaSpecs"), "launcher"),
			"a launcher with GPUs was in the hostfile; Muster's launcher runs mpirun only, so the job has one host fewer")
	}
	kubeflowJob(s, &spec, rp)
	return spec, nil
}

// mpiJob reads what both MPIJob versions share: the Launcher and Worker
// replica specs, slotsPerWorker and the run policy.
func mpiJob(s *source, defaults map[string]musterv1.RestartPolicy) (musterv1.TrainingJobSpec, kfRunPolicy, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	rp, err := readKFRunPolicy(s, sp.child("runPolicy"))
	if err != nil {
		return spec, rp, err
	}
	specs := sp.child("mpiReplicaSpecs")
	roles, err := kfReplicas(s, replicaJob{
		specs: specs, kind: "MPIJob", types: []string{"Worker", "Launcher"}, defaults: defaults,
		replicas: map[string]int32{"worker": 0}, exitCodeNote: kubeflowExitCode,
	})
	if err != nil {
		return spec, rp, err
	}
	if l := findRole(roles, "launcher"); l == nil || deref(l.Replicas) != 1 || len(roles) < 2 {
		return spec, rp, fmt.Errorf("%s: an MPIJob has one Launcher replica and Worker replicas", specs)
	}
	spec.Roles = roles
	mpi := &musterv1.MPIRuntime{}
	if slots, err := s.int32p(sp.child("slotsPerWorker")); err != nil {
		return spec, rp, err
	} else if slots != nil && *slots != 1 {
		mpi.SlotsPerWorker = *slots
	}
	spec.Runtime = &musterv1.Runtime{MPI: mpi}
	return spec, rp, nil
}

// mpiImplementation is Muster's name for an MPI implementation: Intel MPI
// reads MPICH's hostfile.
func mpiImplementation(s *source, p path) (musterv1.MPIImplementation, error) {
	switch impl := s.str(p); impl {
	case "", "OpenMPI":
		return "", nil
	case "Intel", "MPICH":
		return musterv1.MPIMPICH, nil
	default:
		return "", fmt.Errorf("%s %q: OpenMPI, Intel or MPICH", p, impl)
	}
}

// usesGPUs is whether any container of t asks for an NVIDIA GPU.
func usesGPUs(t corev1.PodTemplateSpec) bool {
	for _, c := range t.Spec.Containers {
		if _, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
			return true
		}
	}
	return false
}
