package integration

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A pod of someone else's holds a task's name: the job says so in its
// Running condition and an event, and makes its pod once the name is free.
func TestNameTakenIsReportedAndCleared(t *testing.T) {
	e := newEnv(t)
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nt-worker-1", Namespace: e.ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	e.g.Expect(k8s.Create(e.ctx(), foreign)).To(gomega.Succeed())
	e.create(e.job("nt").Role("worker", 2).Obj())
	got := e.eventuallyJob("nt", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionRunning)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Reason).To(gomega.Equal(string(musterv1.ReasonNameTaken)))
	})
	e.g.Expect(condition(got, musterv1.ConditionRunning).Message).To(gomega.ContainSubstring("pod nt-worker-1 cannot be created"))
	e.g.Expect(k8s.Delete(e.ctx(), foreign)).To(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "nt-worker-1"}, pod)).To(gomega.Succeed())
		g.Expect(metav1.IsControlledBy(pod, got)).To(gomega.BeTrue(), "the job's own pod takes the name")
	}, timeout, interval).Should(gomega.Succeed())
}

// A pod the API server rejects as invalid would be rejected every time:
// the job fails, saying which pod and why, instead of retrying forever.
func TestInvalidPodFailsTheJob(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("bad").Role("worker", 1).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
	}).Obj())
	got := e.waitPhase("bad", musterv1.PhaseFailed)
	e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonPodCreateFailed))
	e.g.Expect(got.Status.Completion.Message).To(gomega.ContainSubstring("creating pod bad-worker-0"))
	e.g.Expect(got.Status.Completion.Message).To(gomega.ContainSubstring("containerPort"))
	e.g.Expect(e.pods("bad")).To(gomega.BeEmpty())
}
