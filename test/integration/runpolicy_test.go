package integration

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func (e *env) setSuspend(name string, suspend bool) {
	e.t.Helper()
	job := e.get(name)
	patch := client.MergeFrom(job.DeepCopy())
	job.Spec.Run.Execution = musterv1.ExecutionStart
	if suspend {
		job.Spec.Run.Execution = musterv1.ExecutionSuspend
	}
	e.g.Expect(k8s.Patch(e.ctx(), job, patch)).To(gomega.Succeed())
}

func TestSuspendDeletesPodsAndResumeRecreatesThem(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("sus").Role("worker", 2).Suspend(true).Obj())
	got := e.waitPhase("sus", musterv1.PhaseSuspended)
	e.g.Expect(got.Status.StartTime).To(gomega.BeNil())
	e.g.Consistently(func() []corev1.Pod { return e.pods("sus") }, "1s", interval).Should(gomega.BeEmpty())

	e.setSuspend("sus", false)
	pods := e.runAll("sus", 2)
	got = e.waitPhase("sus", musterv1.PhaseRunning)
	e.g.Expect(condition(got, musterv1.ConditionSuspended).Status).To(gomega.Equal(metav1.ConditionFalse))

	e.setSuspend("sus", true)
	got = e.waitPhase("sus", musterv1.PhaseSuspended)
	e.waitPodCount("sus", 0)
	e.g.Expect(e.task(got, "worker", 0).State).To(gomega.Equal(musterv1.TaskStopped))
	e.g.Expect(got.Status.Restarts.Total).To(gomega.BeZero(), "suspension is not a restart")

	e.setSuspend("sus", false)
	again := e.waitPod("sus-worker-0", string(pods[0].UID))
	e.g.Expect(again.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelTaskAttempt, "2"))
	e.runAll("sus", 2)
	got = e.waitPhase("sus", musterv1.PhaseRunning)
	e.g.Expect(got.Status.Restarts.Total).To(gomega.BeZero())
}

func TestActiveDeadlineFailsJob(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("dl").Role("worker", 1).ActiveDeadline(2 * time.Second).Obj())
	e.runAll("dl", 1)
	got := e.waitPhase("dl", musterv1.PhaseFailed)
	e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonDeadlineExceeded))
	e.g.Expect(got.Status.CompletionTime.Sub(got.Status.StartTime.Time)).To(gomega.BeNumerically(">=", 2*time.Second))
	e.waitPodCount("dl", 0)
}

func TestTTLDeletesFinishedJobAndItsPods(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("ttl").Role("worker", 1).TTL(2 * time.Second).CleanPodPolicy(musterv1.CleanPodPolicyNone).Obj())
	pod := e.runAll("ttl", 1)[0]
	e.exit(&pod, 0, "Completed")
	e.waitPhase("ttl", musterv1.PhaseSucceeded)
	e.g.Expect(e.pods("ttl")).To(gomega.HaveLen(1), "cleanPodPolicy None keeps the pod")
	e.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "ttl"}, &musterv1.TrainingJob{}))
	}, timeout, interval).Should(gomega.BeTrue())
	e.waitPodCount("ttl", 0)
}

func TestDeletingJobDeletesChildren(t *testing.T) {
	e := newEnv(t)
	job := e.create(e.job("del").Role("worker", 3).Obj())
	e.runAll("del", 3)
	e.g.Expect(k8s.Delete(e.ctx(), job, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(gomega.Succeed())
	e.waitPodCount("del", 0)
	e.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "del"}, &corev1.Service{}))
	}, timeout, interval).Should(gomega.BeTrue())
}

func TestFinishedJobWhosePodsAreDeletedStaysFinished(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("fin").Role("worker", 2).CleanPodPolicy(musterv1.CleanPodPolicyNone).Obj())
	pods := e.runAll("fin", 2)
	for i := range pods {
		e.exit(&pods[i], 0, "Completed")
	}
	e.waitPhase("fin", musterv1.PhaseSucceeded)
	for i := range pods {
		e.g.Expect(k8s.Delete(e.ctx(), &pods[i])).To(gomega.Succeed())
	}
	e.waitPodCount("fin", 0)
	e.g.Consistently(func() []corev1.Pod { return e.pods("fin") }, "2s", interval).Should(gomega.BeEmpty())
	e.g.Expect(e.get("fin").Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded))
}

// The operator can be stopped at any moment and a new one comes back to the
// same truth: status is not recomputed from scratch or counted again.
func TestOperatorRestartKeepsStatus(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("op").Role("worker", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).Obj())
	pods := e.runAll("op", 2)
	e.exit(&pods[1], 1, "Error")
	replacement := e.waitPod("op-worker-1", string(pods[1].UID))
	e.run(replacement)
	before := e.eventuallyJob("op", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
		g.Expect(e.task(j, "worker", 1).PodUID).To(gomega.Equal(replacement.UID))
	})

	operator.stop()
	op, err := startOperator()
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	operator = op

	// Touch the job so the new operator certainly reconciles it.
	patch := client.MergeFrom(before.DeepCopy())
	before.Annotations = map[string]string{"touched": "yes"}
	e.g.Expect(k8s.Patch(e.ctx(), before, patch)).To(gomega.Succeed())
	e.g.Consistently(func() musterv1.TrainingJobStatus { return e.get("op").Status }, "2s", interval).
		Should(gomega.Equal(before.Status))
	e.g.Expect(e.pod("op-worker-1").UID).To(gomega.Equal(replacement.UID))

	e.exit(e.pod("op-worker-0"), 0, "Completed")
	e.exit(replacement, 0, "Completed")
	got := e.waitPhase("op", musterv1.PhaseSucceeded)
	e.g.Expect(got.Status.Restarts).To(gomega.Equal(musterv1.RestartCounts{Total: 1, Accountable: 1}))
}
