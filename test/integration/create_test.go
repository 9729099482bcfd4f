package integration

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/controller"
)

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func TestCreateMakesPodsServiceAndStatus(t *testing.T) {
	e := newEnv(t)
	job := e.create(e.job("pt").PyTorch().Role("master", 1).Role("worker", 2).Obj())

	pods := e.waitPodCount("pt", 3)
	svc := &corev1.Service{}
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "pt"}, svc)).To(gomega.Succeed())
	e.g.Expect(svc.Spec.ClusterIP).To(gomega.Equal(corev1.ClusterIPNone))
	e.g.Expect(svc.Spec.PublishNotReadyAddresses).To(gomega.BeTrue())
	e.g.Expect(metav1.IsControlledBy(svc, job)).To(gomega.BeTrue())

	byName := map[string]corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
		e.g.Expect(metav1.IsControlledBy(&p, job)).To(gomega.BeTrue(), p.Name)
		e.g.Expect(p.Spec.Hostname).To(gomega.Equal(p.Name))
		e.g.Expect(p.Spec.Subdomain).To(gomega.Equal("pt"))
		e.g.Expect(p.Spec.RestartPolicy).To(gomega.Equal(corev1.RestartPolicyNever))
	}
	e.g.Expect(byName).To(gomega.HaveKey("pt-master-0"))
	e.g.Expect(byName).To(gomega.HaveKey("pt-worker-1"))
	w1 := byName["pt-worker-1"]
	e.g.Expect(w1.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelRole, "worker"))
	e.g.Expect(w1.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelTaskIndex, "1"))
	env := envOf(w1.Spec.Containers[0])
	e.g.Expect(env).To(gomega.HaveKeyWithValue("MASTER_ADDR", "pt-master-0.pt"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue("RANK", "2"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue("WORLD_SIZE", "3"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue(musterv1.EnvJobUID, string(job.UID)))
	e.g.Expect(envOf(byName["pt-master-0"].Spec.Containers[0])).To(gomega.HaveKeyWithValue("RANK", "0"))

	got := e.eventuallyJob("pt", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhasePending))
		g.Expect(condition(j, musterv1.ConditionCreated)).NotTo(gomega.BeNil())
		g.Expect(j.Status.Roles).To(gomega.HaveLen(2))
		g.Expect(j.Status.Roles[1].Pending).To(gomega.Equal(int32(2)))
	})
	e.g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
	e.g.Expect(got.Status.StartTime).NotTo(gomega.BeNil())

	for i := range pods {
		e.run(&pods[i])
	}
	got = e.waitPhase("pt", musterv1.PhaseRunning)
	e.g.Expect(got.Status.Ready).To(gomega.Equal("3/3"))
	e.g.Expect(condition(got, musterv1.ConditionRunning).Status).To(gomega.Equal(metav1.ConditionTrue))
	e.g.Expect(e.task(got, "worker", 1).State).To(gomega.Equal(musterv1.TaskRunning))
	e.g.Expect(e.task(got, "worker", 1).Pod).To(gomega.Equal("pt-worker-1"))

	// Master decides: its success ends the job and stops the workers.
	e.exit(e.pod("pt-master-0"), 0, "Completed")
	got = e.waitPhase("pt", musterv1.PhaseSucceeded)
	e.g.Expect(got.Status.Completion.Message).To(gomega.Equal("SucceededTaskCount 1 has reached MinSucceededTaskCount 1 in role master"))
	e.g.Expect(got.Status.CompletionTime).NotTo(gomega.BeNil())
	// cleanPodPolicy Running (the default) deletes the pods that had not ended.
	e.g.Eventually(func() []corev1.Pod { return e.pods("pt") }, timeout, interval).Should(gomega.HaveLen(1))
	e.g.Expect(e.pods("pt")[0].Name).To(gomega.Equal("pt-master-0"))
}

func TestGenericJobPlaceholdersAndAllTasksSucceed(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("gen").Role("worker", 2).Template(func(p *corev1.PodTemplateSpec) {
		p.Labels = map[string]string{"instance": "{{MUSTER_JOB_NAME}}-{{MUSTER_ROLE_NAME}}-{{MUSTER_TASK_INDEX}}"}
		p.Spec.Containers[0].Args = []string{"--pod={{MUSTER_POD_NAME}}", "--unknown={{OTHER}}"}
	}).Obj())
	pods := e.runAll("gen", 2)
	p1 := e.pod("gen-worker-1")
	e.g.Expect(p1.Labels).To(gomega.HaveKeyWithValue("instance", "gen-worker-1"))
	e.g.Expect(p1.Spec.Containers[0].Args).To(gomega.Equal([]string{"--pod=gen-worker-1", "--unknown={{OTHER}}"}))
	e.g.Expect(p1.Spec.Containers[0].Env[0].Name).To(gomega.Equal(musterv1.EnvJobNamespace))

	e.exit(&pods[0], 0, "Completed")
	e.eventuallyJob("gen", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Roles[0].Succeeded).To(gomega.Equal(int32(1)))
	})
	e.g.Expect(e.get("gen").Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
	e.exit(&pods[1], 0, "Completed")
	got := e.waitPhase("gen", musterv1.PhaseSucceeded)
	e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonAllTasksCompleted))
}

// With --status-batch-start, a job whose pods run within the status batch
// has one status write: the job Running, accepted, with its start time
// its first pod's creation. Until then its status is empty.
func TestAStartWaitingForItsPodsIsWrittenOnce(t *testing.T) {
	e := newEnv(t)
	e.replaceOperator()
	batched, err := startOperator(func(o *controller.Options) {
		o.StatusBatch, o.StatusBatchStart = time.Minute, true
	})
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	defer batched.stop()

	watcher, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	w, err := watcher.Watch(e.ctx(), &musterv1.TrainingJobList{}, client.InNamespace(e.ns))
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	defer w.Stop()

	e.create(e.job("once").Role("worker", 2).Obj())
	pods := e.waitPodCount("once", 2)
	e.g.Expect(e.get("once").Status.Phase).To(gomega.BeEmpty(), "the start was written before the pods ran")
	for i := range pods {
		e.run(&pods[i])
	}
	job := e.waitPhase("once", musterv1.PhaseRunning)

	// Every change the job went through: its create, and one status write.
	var phases []musterv1.JobPhase
	e.g.Eventually(func() []musterv1.JobPhase {
		for {
			select {
			case ev := <-w.ResultChan():
				if j, ok := ev.Object.(*musterv1.TrainingJob); ok {
					phases = append(phases, j.Status.Phase)
				}
			default:
				return phases
			}
		}
	}, timeout, interval).Should(gomega.Equal([]musterv1.JobPhase{"", musterv1.PhaseRunning}))
	e.g.Expect(job.Status.IsTrue(musterv1.ConditionCreated)).To(gomega.BeTrue(), "the job is not shown accepted")
	first := pods[0].CreationTimestamp
	for _, p := range pods[1:] {
		if p.CreationTimestamp.Before(&first) {
			first = p.CreationTimestamp
		}
	}
	e.g.Expect(job.Status.StartTime).NotTo(gomega.BeNil())
	e.g.Expect(job.Status.StartTime.Time).To(gomega.BeTemporally("==", first.Time), "the start time is not the first pod's creation")
}
