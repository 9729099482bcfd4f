package objects

import (
	"bytes"
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

const (
	mpiHostfileVolume = "muster-mpi-hostfile"
	mpiSSHVolume      = "muster-mpi-ssh"
	// MPIHostfileDir is where the launcher finds the hostfile.
	MPIHostfileDir = "/etc/mpi"
	// MPIHostfileKey is the hostfile's key in its ConfigMap and its file
	// name.
	MPIHostfileKey = "hostfile"
	// The files of the SSH Secret.
	SSHPrivateKey     = "id_ecdsa"
	SSHPublicKey      = "id_ecdsa.pub"
	SSHAuthorizedKeys = "authorized_keys"
	SSHConfig         = "config"
	sshPort           = 22
)

// sshClientConfig trusts the job's own hosts without asking: their host
// keys are made fresh with every pod, so there is nothing to pin.
const sshClientConfig = `Host *
  IdentityFile %s/` + SSHPrivateKey + `
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
`

// MPIHostfileConfigMapName names the hostfile ConfigMap of an MPI job.
func MPIHostfileConfigMapName(job *musterv1.TrainingJob) string { return job.Name + "-mpi" }

// UsesSSHSecret is whether job's pods mount an SSH key pair Secret: those
// of an MPI job. They mount the one status.mpi.sshSecretName names.
func UsesSSHSecret(job *musterv1.TrainingJob) bool {
	rt := job.Spec.Runtime
	return rt != nil && rt.MPI != nil
}

// legacyMPISSHSecretName is the name earlier versions gave the job's SSH
// Secret: the job's name and the start of its UID. Anyone who may create
// Secrets in the namespace and read the job could make a Secret of that name
// before the operator did.
func legacyMPISSHSecretName(job *musterv1.TrainingJob) string {
	uid, _, _ := strings.Cut(string(job.UID), "-")
	return strings.TrimSuffix(job.Name+"-ssh-"+uid, "-")
}

// LegacyMPISSHSecret is the SSH Secret an earlier version made for job, if
// pod, one of the job's, mounts it: the job started before its status
// recorded the Secret, and its running pods trust that key. It is "" for a
// pod that mounts another, or none.
func LegacyMPISSHSecret(job *musterv1.TrainingJob, pod *corev1.Pod) string {
	legacy := legacyMPISSHSecretName(job)
	for _, v := range pod.Spec.Volumes {
		if v.Name == mpiSSHVolume && v.Secret != nil && v.Secret.SecretName == legacy {
			return legacy
		}
	}
	return ""
}

// MPISSHVolume is, of a pod's volumes, the one that mounts the job's SSH
// Secret, with its name and the Secret's alone: what LegacyMPISSHSecret
// reads, for a pod cache that keeps nothing else of the spec. Nil for a
// pod that mounts none.
func MPISSHVolume(volumes []corev1.Volume) []corev1.Volume {
	for _, v := range volumes {
		if v.Name == mpiSSHVolume && v.Secret != nil {
			return []corev1.Volume{{Name: mpiSSHVolume, VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: v.Secret.SecretName}}}}
		}
	}
	return nil
}

// mpiLauncher is the launcher role, with its default applied.
func mpiLauncher(m *musterv1.MPIRuntime) string { return cmp.Or(m.LauncherRole, "launcher") }

// MPIWorkerRoles are the roles of an MPI job that are not the launcher.
func MPIWorkerRoles(job *musterv1.TrainingJob) []string {
	launcher := mpiLauncher(job.Spec.Runtime.MPI)
	var out []string
	for _, r := range job.Spec.Roles {
		if r.Name != launcher {
			out = append(out, r.Name)
		}
	}
	return out
}

// IsMPILauncher is whether role is the launcher of an MPI job.
func IsMPILauncher(job *musterv1.TrainingJob, role string) bool {
	rt := job.Spec.Runtime
	return rt != nil && rt.MPI != nil && role == mpiLauncher(rt.MPI)
}

// mpiWiring mounts the job's SSH files in every pod, from the Secret the
// job's status names (the planner creates no pod of the job before it
// does), the hostfile in the launcher's, and points mpirun at the
// hostfile. The launcher starts only once every worker runs (the planner
// holds it as it holds a role with dependsOn), and its wait step then
// waits for each worker's SSH port.
func mpiWiring(t taskRef, m *musterv1.MPIRuntime) wiring {
	sshPath := cmp.Or(m.SSHMountPath, "/root/.ssh")
	mode := int32(0o600)
	w := wiring{
		volumes: []corev1.Volume{{Name: mpiSSHVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: t.job.Status.MPI.SSHSecretName, DefaultMode: &mode},
		}}},
		mounts: []corev1.VolumeMount{{Name: mpiSSHVolume, MountPath: sshPath, ReadOnly: true}},
	}
	if t.role.Name != mpiLauncher(m) {
		return w
	}
	hostfile := MPIHostfileDir + "/" + MPIHostfileKey
	w.volumes = append(w.volumes, corev1.Volume{Name: mpiHostfileVolume, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: MPIHostfileConfigMapName(t.job)}},
	}})
	w.mounts = append(w.mounts, corev1.VolumeMount{Name: mpiHostfileVolume, MountPath: MPIHostfileDir, ReadOnly: true})
	if m.Implementation == musterv1.MPIMPICH {
		w.env = []corev1.EnvVar{{Name: "HYDRA_HOST_FILE", Value: hostfile}, {Name: "HYDRA_LAUNCHER", Value: "ssh"}}
	} else {
		w.env = []corev1.EnvVar{
			// OpenMPI 4 (ORTE) and 5 (PRRTE) read their default hostfile
			// from different variables.
			{Name: "OMPI_MCA_orte_default_hostfile", Value: hostfile},
			{Name: "PRTE_MCA_prte_default_hostfile", Value: hostfile},
			{Name: "OMPI_MCA_plm_rsh_agent", Value: "ssh"},
			// Both cut a hostfile's names at the first dot unless told not
			// to, and a worker's bare pod name does not resolve: only
			// <pod>.<job> does, through the namespace's search domain.
			{Name: "OMPI_MCA_orte_keep_fqdn_hostnames", Value: "true"},
			{Name: "PRTE_MCA_prte_keep_fqdn_hostnames", Value: "true"},
		}
	}
	for _, name := range MPIWorkerRoles(t.job) {
		if r := topology.Find(t.job, name); r != nil {
			w.waitFor = append(w.waitFor, withPort(roleHosts(t.job, r), sshPort)...)
		}
	}
	return w
}

// mpiHostfileConfigMap lists every worker with its slots, in the syntax of
// the job's MPI implementation.
func mpiHostfileConfigMap(job *musterv1.TrainingJob, m *musterv1.MPIRuntime) *corev1.ConfigMap {
	slots := cmp.Or(m.SlotsPerWorker, 1)
	var b strings.Builder
	for _, name := range MPIWorkerRoles(job) {
		r := topology.Find(job, name)
		if r == nil {
			continue
		}
		for _, h := range roleHosts(job, r) {
			if m.Implementation == musterv1.MPIMPICH {
				fmt.Fprintf(&b, "%s:%d\n", h, slots)
			} else {
				fmt.Fprintf(&b, "%s slots=%d\n", h, slots)
			}
		}
	}
	return &corev1.ConfigMap{
		ObjectMeta: childMeta(job, MPIHostfileConfigMapName(job)),
		Data:       map[string]string{MPIHostfileKey: b.String()},
	}
}

// MPISSHSecret is the job's SSH Secret without its keys: the client
// config only. GenerateSSHKeys fills in the rest when the Secret is
// created. It has no name, only metadata.generateName (<job>-ssh-): the API
// server picks the name as it creates it, so nobody can make a Secret of
// that name first and have the job's pods trust a key of their own. The
// job's status records the name, and it is never made again, so pods of
// every attempt share it.
func MPISSHSecret(job *musterv1.TrainingJob) *corev1.Secret {
	path := cmp.Or(job.Spec.Runtime.MPI.SSHMountPath, "/root/.ssh")
	meta := childMeta(job, "")
	meta.GenerateName = job.Name + "-ssh-"
	return &corev1.Secret{
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{SSHConfig: fmt.Appendf(nil, sshClientConfig, path)},
	}
}

// GenerateSSHKeys adds a fresh ECDSA P-256 key pair to secret: the private
// key in PEM, the public key in OpenSSH's one-line form, and the same as
// authorized_keys, so every pod of the job accepts every other.
func GenerateSSHKeys(secret *corev1.Secret) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the SSH key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the SSH key: %w", err)
	}
	pub, err := sshPublicKey(key, cmp.Or(secret.Name, strings.TrimSuffix(secret.GenerateName, "-")))
	if err != nil {
		return err
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[SSHPrivateKey] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	secret.Data[SSHPublicKey] = pub
	secret.Data[SSHAuthorizedKeys] = pub
	return nil
}

// sshPublicKey is key in OpenSSH's authorized_keys form (RFC 5656: the
// key type, the curve and the uncompressed point, each length-prefixed).
func sshPublicKey(key *ecdsa.PrivateKey, comment string) ([]byte, error) {
	ek, err := key.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("encoding the SSH public key: %w", err)
	}
	var blob bytes.Buffer
	for _, field := range [][]byte{[]byte("ecdsa-sha2-nistp256"), []byte("nistp256"), ek.Bytes()} {
		_ = binary.Write(&blob, binary.BigEndian, uint32(len(field)))
		blob.Write(field)
	}
	return fmt.Appendf(nil, "ecdsa-sha2-nistp256 %s %s\n", base64.StdEncoding.EncodeToString(blob.Bytes()), comment), nil
}
