package integration

import (
	"testing"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// An elastic job gets a rendezvous store pod of its own: made first,
// replaced if it goes, removed when the job ends.
func TestDedicatedRendezvousStore(t *testing.T) {
	e := newEnv(t)
	job := e.create(e.job("el").Role("worker", 2).Elastic(1, 2).RestartPolicy(musterv1.RestartPolicyOnFailure).Obj())
	store := e.waitPod("el-store", "")
	e.g.Expect(metav1.IsControlledBy(store, job)).To(gomega.BeTrue())
	e.g.Expect(store.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelComponent, musterv1.ComponentStore))
	e.g.Consistently(func() int { return len(e.pods("el")) }, "1s", interval).Should(gomega.Equal(1), "workers wait for the store")
	got := e.eventuallyJob("el", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(condition(j, musterv1.ConditionRunning)).NotTo(gomega.BeNil())
		g.Expect(condition(j, musterv1.ConditionRunning).Message).To(gomega.ContainSubstring("waits for the rendezvous store el-store"))
	})
	e.g.Expect(got.Status.Elastic.Endpoint).To(gomega.Equal("el-store.el:29400"))

	e.run(store)
	workers := e.waitPodCount("el", 3)
	for _, p := range workers {
		if p.Name != "el-store" {
			env := envOf(p.Spec.Containers[0])
			e.g.Expect(env).To(gomega.HaveKeyWithValue("PET_RDZV_ENDPOINT", "el-store.el:29400"))
			e.run(&p)
		}
	}
	e.waitPhase("el", musterv1.PhaseRunning)

	// Someone deletes the store: a new one is made; the workers stay.
	worker0 := e.pod("el-worker-0").UID
	e.g.Expect(k8s.Delete(e.ctx(), e.pod("el-store"))).To(gomega.Succeed())
	replacement := e.waitPod("el-store", string(store.UID))
	e.g.Expect(e.pod("el-worker-0").UID).To(gomega.Equal(worker0))
	e.run(replacement)

	// A worker succeeds: the job succeeds and the store goes.
	e.exit(e.pod("el-worker-1"), 0, "Completed")
	e.waitPhase("el", musterv1.PhaseSucceeded)
	e.g.Eventually(func() bool { return hasPod(e.pods("el"), "el-store") }, timeout, interval).Should(gomega.BeFalse())
}

func TestRendezvousValidation(t *testing.T) {
	e := newEnv(t)
	job := e.job("rv").Role("worker", 2).Elastic(1, 2).Obj()
	job.Spec.Runtime.PyTorch.Elastic.Rendezvous = musterv1.Rendezvous{Backend: "etcd-v2"}
	err := k8s.Create(e.ctx(), job)
	e.g.Expect(err).To(gomega.HaveOccurred())
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("the etcd and etcd-v2 backends need store External"))

	job = e.job("rv").Role("worker", 2).Elastic(1, 2).Obj()
	job.Spec.Runtime.PyTorch.Elastic.Rendezvous = musterv1.Rendezvous{Store: musterv1.StoreExternal}
	err = k8s.Create(e.ctx(), job)
	e.g.Expect(err).To(gomega.HaveOccurred())
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("endpoint is required with store External"))
	e.g.Expect(e.pods("rv")).To(gomega.BeEmpty())
}
