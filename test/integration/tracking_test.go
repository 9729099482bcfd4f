package integration

import (
	"slices"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A pod that fails and is deleted at once (by the pod garbage collector or
// a user, before the operator could see it end) is held by the tracking
// finalizer until the operator has read its exit: the failure is charged
// with its exit code, then the pod goes and is replaced. Deleting the job
// lets its pods go too.
func TestTrackingFinalizerKeepsAFailureDeletedUnseen(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("tf").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(5).Obj())
	pods := e.runAll("tf", 2)
	for _, p := range pods {
		e.g.Expect(p.Finalizers).To(gomega.ContainElement(musterv1.FinalizerTracking), "pod %s", p.Name)
	}
	e.waitPhase("tf", musterv1.PhaseRunning)

	failed := pods[1]
	e.exit(&failed, 3, "Error")
	e.g.Expect(k8s.Delete(e.ctx(), &failed, client.GracePeriodSeconds(0))).To(gomega.Succeed())

	got := e.eventuallyJob("tf", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Restarts).To(gomega.Equal(musterv1.RestartCounts{Total: 1, Accountable: 1}))
	})
	exit := e.task(got, "w", 1).LastExit
	e.g.Expect(exit).NotTo(gomega.BeNil())
	e.g.Expect(exit.Code).To(gomega.BeEquivalentTo(3))
	replacement := e.waitPod(failed.Name, string(failed.UID))
	e.g.Expect(replacement.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelTaskAttempt, "2"))

	// The job goes: the garbage collector deletes its pods, and the
	// operator lets them go.
	job := e.get("tf")
	e.g.Expect(k8s.Delete(e.ctx(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(gomega.Succeed())
	e.g.Eventually(func() []corev1.Pod { return e.pods("tf") }, timeout, interval).Should(gomega.BeEmpty())
}

// The release patch names the pod's UID, so it never strips the finalizer
// from another pod that took the name.
func TestReleasePatchNeedsTheSameUID(t *testing.T) {
	e := newEnv(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: e.ns, Finalizers: []string{musterv1.FinalizerTracking}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	e.g.Expect(k8s.Create(e.ctx(), pod)).To(gomega.Succeed())
	release := func(uid types.UID) error {
		patch := `{"metadata":{"uid":"` + string(uid) + `","$deleteFromPrimitiveList/finalizers":["` + musterv1.FinalizerTracking + `"]}}`
		return k8s.Patch(e.ctx(), pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
	}
	e.g.Expect(release("another-pods-uid")).NotTo(gomega.Succeed())
	e.g.Expect(slices.Contains(e.pod("held").Finalizers, musterv1.FinalizerTracking)).To(gomega.BeTrue())
	e.g.Expect(release(pod.UID)).To(gomega.Succeed())
	e.g.Expect(e.pod("held").Finalizers).To(gomega.BeEmpty())
}
