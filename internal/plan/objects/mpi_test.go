package objects

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func mpiJob(m musterv1.MPIRuntime, workers ...int32) *musterv1.TrainingJob {
	b := testutil.MakeJob("mpi", "ns").UID("abcd1234-ffff").Runtime(musterv1.Runtime{MPI: &m})
	names := []string{"worker", "big-worker"}
	for i, n := range workers {
		b.Role(names[i], n)
	}
	return b.Role("launcher", 1).Obj()
}

func TestMPIHostfile(t *testing.T) {
	cases := map[string]struct {
		rt      musterv1.MPIRuntime
		workers []int32
		want    string
	}{
		"one worker, one slot": {musterv1.MPIRuntime{}, []int32{1}, "mpi-worker-0.mpi slots=1\n"},
		"OpenMPI slots": {musterv1.MPIRuntime{SlotsPerWorker: 4}, []int32{2},
			"mpi-worker-0.mpi slots=4\nmpi-worker-1.mpi slots=4\n"},
		"MPICH, two worker roles": {musterv1.MPIRuntime{SlotsPerWorker: 2, Implementation: musterv1.MPIMPICH}, []int32{1, 2},
			"mpi-worker-0.mpi:2\nmpi-big-worker-0.mpi:2\nmpi-big-worker-1.mpi:2\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := DesiredRuntimeObjects(mpiJob(tc.rt, tc.workers...))
			cm, ok := objs[0].(*corev1.ConfigMap)
			if !ok || cm.Name != "mpi-mpi" {
				t.Fatalf("first object = %+v", objs[0])
			}
			if diff := cmp.Diff(tc.want, cm.Data[MPIHostfileKey]); diff != "" {
				t.Errorf("hostfile (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMPIPods(t *testing.T) {
	job := mpiJob(musterv1.MPIRuntime{}, 3)
	job.Status.MPI.SSHSecretName = "mpi-ssh-k7x2p"
	launcher := podOf(t, job, "launcher", 0)
	checkEnv(t, launcher, map[string]string{
		"OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile", "PRTE_MCA_prte_default_hostfile": "/etc/mpi/hostfile",
		"OMPI_MCA_orte_keep_fqdn_hostnames": "true", "PRTE_MCA_prte_keep_fqdn_hostnames": "true",
	})
	want := []string{"mpi-worker-0.mpi:22", "mpi-worker-1.mpi:22", "mpi-worker-2.mpi:22"}
	if diff := cmp.Diff(want, waitedFor(launcher)); diff != "" {
		t.Errorf("the launcher waits for every worker's SSH port (-want +got):\n%s", diff)
	}
	mounts := map[string]string{}
	for _, m := range launcher.Spec.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if diff := cmp.Diff(map[string]string{mpiSSHVolume: "/root/.ssh", mpiHostfileVolume: "/etc/mpi"}, mounts); diff != "" {
		t.Errorf("launcher mounts (-want +got):\n%s", diff)
	}
	for i := range int32(3) {
		w := podOf(t, job, "worker", i)
		checkEnv(t, w, map[string]string{"OMPI_MCA_orte_default_hostfile": ""})
		if len(w.Spec.Volumes) != 1 || w.Spec.Volumes[0].Secret.SecretName != "mpi-ssh-k7x2p" || *w.Spec.Volumes[0].Secret.DefaultMode != 0o600 {
			t.Errorf("%s volumes = %+v, want the SSH Secret status.mpi names only, mode 0600", w.Name, w.Spec.Volumes)
		}
		if waitedFor(w) != nil {
			t.Errorf("%s: a worker serves SSH and waits for nobody", w.Name)
		}
	}
	mpich := podOf(t, mpiJob(musterv1.MPIRuntime{Implementation: musterv1.MPIMPICH, SSHMountPath: "/home/mpi/.ssh"}, 1), "launcher", 0)
	checkEnv(t, mpich, map[string]string{"HYDRA_HOST_FILE": "/etc/mpi/hostfile", "OMPI_MCA_orte_default_hostfile": ""})
	if p := mpich.Spec.Containers[0].VolumeMounts[0].MountPath; p != "/home/mpi/.ssh" {
		t.Errorf("ssh mount path = %q", p)
	}
}

// The SSH Secret's name is the API server's pick, so nobody can take it
// first: the desired Secret has only a prefix, and is the job's. It is not
// among the objects made with every batch of pods.
func TestMPISSHSecretHasAGeneratedName(t *testing.T) {
	job := mpiJob(musterv1.MPIRuntime{}, 1)
	s := MPISSHSecret(job)
	if s.Name != "" || s.GenerateName != "mpi-ssh-" || s.Namespace != "ns" {
		t.Errorf("name %q, generateName %q, namespace %q; want no name, generateName mpi-ssh-, namespace ns", s.Name, s.GenerateName, s.Namespace)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != job.UID || !*s.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v, want the job as controller", s.OwnerReferences)
	}
	for _, obj := range DesiredRuntimeObjects(job) {
		if _, ok := obj.(*corev1.Secret); ok {
			t.Errorf("the runtime objects hold a Secret: %s", obj.GetName())
		}
	}
}

// A pod an earlier version made mounts the Secret of the name it chose:
// that, and only that, is the job's earlier Secret.
func TestLegacyMPISSHSecret(t *testing.T) {
	job := mpiJob(musterv1.MPIRuntime{}, 1)
	mounting := func(name string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: mpiSSHVolume,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}}}
	}
	if got := LegacyMPISSHSecret(job, mounting("mpi-ssh-abcd1234")); got != "mpi-ssh-abcd1234" {
		t.Errorf("a pod mounting the earlier name: %q", got)
	}
	for _, pod := range []*corev1.Pod{mounting("mpi-ssh-k7x2p"), mounting("mpi-ssh-abcd"), {}} {
		if got := LegacyMPISSHSecret(job, pod); got != "" {
			t.Errorf("pod %+v: %q, want none", pod.Spec.Volumes, got)
		}
	}
}

func TestMPISSHKeys(t *testing.T) {
	s := MPISSHSecret(mpiJob(musterv1.MPIRuntime{}, 1))
	if !strings.Contains(string(s.Data[SSHConfig]), "IdentityFile /root/.ssh/id_ecdsa") || s.Data[SSHPrivateKey] != nil {
		t.Fatalf("the desired Secret has the client config and no key: %v", s.Data)
	}
	if err := GenerateSSHKeys(s); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(s.Data[SSHPrivateKey])
	if block == nil || block.Type != "EC PRIVATE KEY" {
		t.Fatalf("private key is not a PEM EC key: %q", s.Data[SSHPrivateKey])
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(s.Data[SSHPublicKey]))
	if len(fields) != 3 || fields[0] != "ecdsa-sha2-nistp256" || fields[2] != "mpi-ssh" || string(s.Data[SSHAuthorizedKeys]) != string(s.Data[SSHPublicKey]) {
		t.Fatalf("public key = %q, authorized_keys = %q", s.Data[SSHPublicKey], s.Data[SSHAuthorizedKeys])
	}
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	ek, err := key.PublicKey.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	// The blob ends with the public point: the key pair matches.
	if !strings.HasSuffix(string(blob), string(ek.Bytes())) {
		t.Error("the public key does not belong to the private key")
	}
	other := MPISSHSecret(mpiJob(musterv1.MPIRuntime{}, 1))
	if err := GenerateSSHKeys(other); err != nil {
		t.Fatal(err)
	}
	if string(other.Data[SSHPrivateKey]) == string(s.Data[SSHPrivateKey]) {
		t.Error("every Secret gets keys of its own")
	}
}
