package integration

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// ownedObject waits for an object of the job's and checks the job owns it.
func (e *env) ownedObject(job *musterv1.TrainingJob, name string, obj client.Object) {
	e.t.Helper()
	e.g.Eventually(func() error {
		return k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, obj)
	}, timeout, interval).Should(gomega.Succeed(), name)
	e.g.Expect(metav1.IsControlledBy(obj, job)).To(gomega.BeTrue(), "%s is owned by the job", name)
}

func TestMPIJobGetsHostfileAndKeysAndALauncherAfterItsWorkers(t *testing.T) {
	e := newEnv(t)
	job := e.create(e.job("mpi").Runtime(musterv1.Runtime{MPI: &musterv1.MPIRuntime{SlotsPerWorker: 2}}).
		Role("worker", 2).Role("launcher", 1).Obj())

	cm := &corev1.ConfigMap{}
	e.ownedObject(job, "mpi-mpi", cm)
	e.g.Expect(cm.Data).To(gomega.HaveKeyWithValue("hostfile", "mpi-worker-0.mpi slots=2\nmpi-worker-1.mpi slots=2\n"))
	// The SSH Secret has the name the API server gave it, recorded in
	// status before any pod mounts it; it is the only one of the job.
	name := e.eventuallyJob("mpi", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.MPI.SSHSecretName).To(gomega.HavePrefix("mpi-ssh-"))
	}).Status.MPI.SSHSecretName
	secret := &corev1.Secret{}
	e.ownedObject(job, name, secret)
	var secrets corev1.SecretList
	ofJob := []client.ListOption{client.InNamespace(e.ns), client.MatchingLabels{musterv1.LabelJobName: "mpi"}}
	e.g.Expect(k8s.List(e.ctx(), &secrets, ofJob...)).To(gomega.Succeed())
	e.g.Expect(secrets.Items).To(gomega.HaveLen(1))
	e.g.Expect(secret.Data).To(gomega.HaveKey(objects.SSHPrivateKey))
	e.g.Expect(secret.Data).To(gomega.HaveKey(objects.SSHAuthorizedKeys))
	key := string(secret.Data[objects.SSHPrivateKey])

	workers := e.runAll("mpi", 2)
	launcher := e.waitPod("mpi-launcher-0", "")
	e.g.Expect(envOf(launcher.Spec.Containers[0])).To(gomega.HaveKeyWithValue("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"))
	e.g.Expect(launcher.Spec.InitContainers[0].Name).To(gomega.Equal(objects.WaitContainerName))
	e.g.Expect(launcher.Spec.InitContainers[0].Command).To(gomega.ContainElements("mpi-worker-0.mpi:22", "mpi-worker-1.mpi:22"))
	for _, w := range workers {
		e.g.Expect(w.Spec.Volumes).To(gomega.ContainElement(gomega.HaveField("Secret.SecretName", name)))
	}

	// A lost worker restarts the job; the new attempt reuses the Secret
	// and its keys: they are made once per job.
	e.exit(&workers[0], 137, "Error")
	e.eventuallyJob("mpi", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Attempt).To(gomega.BeNumerically(">=", 1))
	})
	e.g.Eventually(func(g gomega.Gomega) {
		w := &corev1.Pod{}
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "mpi-worker-0"}, w)).To(gomega.Succeed())
		g.Expect(w.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, "1"))
	}, timeout, interval).Should(gomega.Succeed())
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(secret), secret)).To(gomega.Succeed())
	e.g.Expect(string(secret.Data[objects.SSHPrivateKey])).To(gomega.Equal(key))
	e.g.Expect(e.waitPod("mpi-worker-0", "").Spec.Volumes).To(gomega.ContainElement(gomega.HaveField("Secret.SecretName", name)))
	e.g.Expect(k8s.List(e.ctx(), &secrets, ofJob...)).To(gomega.Succeed())
	e.g.Expect(secrets.Items).To(gomega.HaveLen(1))
}

func TestVolcanoJobGetsHostsFiles(t *testing.T) {
	e := newEnv(t)
	job := e.create(e.job("vc").Runtime(musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{}}).
		Role("ps", 1).Role("worker", 2).Obj())
	cm := &corev1.ConfigMap{}
	e.ownedObject(job, "vc-svc", cm)
	e.g.Expect(cm.Data).To(gomega.Equal(map[string]string{"ps.host": "vc-ps-0.vc", "worker.host": "vc-worker-0.vc\nvc-worker-1.vc"}))
	pod := e.waitPod("vc-worker-1", "")
	env := envOf(pod.Spec.Containers[0])
	e.g.Expect(env).To(gomega.HaveKeyWithValue("VC_TASK_INDEX", "1"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue("VC_WORKER_HOSTS", "vc-worker-0.vc,vc-worker-1.vc"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue("VC_PS_NUM", "1"))
	e.g.Expect(pod.Spec.Containers[0].VolumeMounts).To(gomega.ContainElement(gomega.HaveField("MountPath", "/etc/volcano")))
}

// A Volcano-style job may be rescaled, as a Volcano Job may: the hosts
// files follow the new size both ways (the VC_*_NUM variables of running
// pods keep the size they started with, as under Volcano).
func TestVolcanoJobHostsFollowARescale(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("vs").Runtime(musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{}}).
		Role("worker", 3).Scalable(1, 4).Obj())
	hosts := func(g gomega.Gomega) string {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "vs-svc"}, cm)).To(gomega.Succeed())
		return cm.Data["worker.host"]
	}
	e.runAll("vs", 3)
	e.g.Eventually(hosts, timeout, interval).Should(gomega.Equal("vs-worker-0.vs\nvs-worker-1.vs\nvs-worker-2.vs"))
	e.g.Expect(e.update("vs", func(j *musterv1.TrainingJob) { j.Spec.Scaling.Replicas = new(int32(2)) })).To(gomega.Succeed())
	e.g.Eventually(hosts, timeout, interval).Should(gomega.Equal("vs-worker-0.vs\nvs-worker-1.vs"))
	e.g.Expect(e.update("vs", func(j *musterv1.TrainingJob) { j.Spec.Scaling.Replicas = new(int32(4)) })).To(gomega.Succeed())
	e.g.Eventually(hosts, timeout, interval).Should(gomega.Equal("vs-worker-0.vs\nvs-worker-1.vs\nvs-worker-2.vs\nvs-worker-3.vs"))
}

func TestPaddlePodListJobGetsItsOwnPodReader(t *testing.T) {
	e := newEnv(t)
	job := e.create(e.job("ctr").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{PeerDiscovery: musterv1.PeerDiscoveryPodList}}).
		Role("pserver", 2).Role("trainer", 2).Obj())
	name := objects.PodReaderName(job)
	e.ownedObject(job, name, &corev1.ServiceAccount{})
	role := &rbacv1.Role{}
	e.ownedObject(job, name, role)
	e.g.Expect(role.Rules).To(gomega.Equal([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}))
	e.ownedObject(job, name, &rbacv1.RoleBinding{})

	pods := e.waitPodCount("ctr", 4)
	for _, p := range pods {
		e.g.Expect(p.Spec.ServiceAccountName).To(gomega.Equal(name), p.Name)
	}
	trainer := e.pod("ctr-trainer-1")
	env := envOf(trainer.Spec.Containers[0])
	e.g.Expect(env).To(gomega.HaveKeyWithValue("PADDLE_PSERVERS_IP_PORT_LIST", "ctr-pserver-0.ctr:30236,ctr-pserver-1.ctr:30236"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue("PADDLE_TRAINER_ID", "1"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue("TRAINING_ROLE", "TRAINER"))
}

func TestRuntimeValidationNamesTheField(t *testing.T) {
	e := newEnv(t)
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		want string
	}{
		"two runtimes": {e.job("two").Runtime(musterv1.Runtime{JAX: &musterv1.JAXRuntime{}, TensorFlow: &musterv1.TensorFlowRuntime{}}).Role("w", 1).Obj(),
			"spec.runtime must set exactly one"},
		"no runtime in runtime": {e.job("none").Runtime(musterv1.Runtime{}).Role("w", 1).Obj(), "spec.runtime must set exactly one"},
		"paddle without pservers": {e.job("pd").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{}}).Role("trainer", 1).Obj(),
			"spec.runtime.paddle.pserverRole"},
		"mpi launcher not last": {e.job("mp").Runtime(musterv1.Runtime{MPI: &musterv1.MPIRuntime{}}).Role("launcher", 1).Role("worker", 1).Obj(),
			"spec.runtime.mpi.launcherRole"},
		"tensorflow task type of an unknown role": {e.job("tf").Runtime(musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{
			TaskTypes: []musterv1.TensorFlowTaskType{{Role: "nope", Type: musterv1.TFWorker}}}}).Role("w", 1).Obj(),
			"spec.runtime.tensorflow.taskTypes"},
		"scaling a static runtime": {e.job("sc").Runtime(musterv1.Runtime{JAX: &musterv1.JAXRuntime{}}).Role("w", 2).Scalable(1, 4).Obj(),
			"spec.scaling is for PyTorch and Volcano Job jobs only"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			err := k8s.Create(e.ctx(), tc.job, client.DryRunAll)
			g.Expect(err).To(gomega.HaveOccurred())
			g.Expect(err.Error()).To(gomega.ContainSubstring(tc.want))
		})
	}
}
