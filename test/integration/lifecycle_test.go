package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A permanent failure with restarts left ends the job, never leaves it
// Restarting.
func TestPermanentFailureEndsTheJob(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("perm").Role("worker", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(5).Obj())
	pods := e.runAll("perm", 2)
	e.exit(&pods[0], 127, "Error")
	got := e.waitPhase("perm", musterv1.PhaseFailed)
	task := e.task(got, "worker", 0)
	e.g.Expect(task.State).To(gomega.Equal(musterv1.TaskFailed))
	e.g.Expect(task.LastExit.Phrase).To(gomega.Equal("ContainerCommandNotFound"))
	e.g.Expect(task.LastExit.Attributes).To(gomega.Equal([]string{"Permanent"}))
	e.g.Expect(got.Status.Restarts.Total).To(gomega.BeZero())
	e.g.Expect(*got.Status.Completion.Code).To(gomega.Equal(task.LastExit.CompletionCode))
}

// Replacements under ExitCode count against the backoff limit.
func TestExitCodeRestartsCountAgainstBackoffLimit(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("ec").Role("worker", 1).BackoffLimit(1).Obj())
	first := e.runAll("ec", 1)[0]
	e.exit(&first, 137, "Error")
	second := e.waitPod("ec-worker-0", string(first.UID))
	e.run(second)
	e.eventuallyJob("ec", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(e.task(j, "worker", 0).PodUID).To(gomega.Equal(second.UID))
	})
	e.exit(second, 137, "Error")
	got := e.waitPhase("ec", musterv1.PhaseFailed)
	e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonBackoffLimitExceeded))
}

// One worker failing in a static PyTorch job restarts the whole gang: every
// pod is recreated in a new attempt.
func TestStaticCollectiveJobRestartsTheGang(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("gang").PyTorch().Role("master", 1).Role("worker", 2).Obj())
	pods := e.runAll("gang", 3)
	e.waitPhase("gang", musterv1.PhaseRunning)
	old := map[string]string{}
	for _, p := range pods {
		old[p.Name] = string(p.UID)
	}
	e.exit(e.pod("gang-worker-1"), 137, "Error")
	e.g.Eventually(func(g gomega.Gomega) {
		pods := e.pods("gang")
		g.Expect(pods).To(gomega.HaveLen(3))
		for _, p := range pods {
			g.Expect(string(p.UID)).NotTo(gomega.Equal(old[p.Name]), p.Name)
			g.Expect(p.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, "1"))
		}
	}, timeout, interval).Should(gomega.Succeed())
	e.runAll("gang", 3)
	got := e.waitPhase("gang", musterv1.PhaseRunning)
	e.g.Expect(got.Status.Attempt).To(gomega.Equal(int32(1)))
	e.g.Expect(got.Status.Restarts).To(gomega.Equal(musterv1.RestartCounts{Total: 1, Accountable: 1}))
	e.g.Expect(got.Status.Attempts).To(gomega.HaveLen(1))
	e.g.Expect(got.Status.Attempts[0].Completion.Reason).To(gomega.Equal(musterv1.ReasonJobRestarting))
}

// Killing the operator between "decided to restart" and "deleted the pod"
// neither loses nor doubles the restart.
func TestOperatorCrashBetweenDecisionAndAction(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("crash").Role("worker", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).Obj())
	first := e.runAll("crash", 1)[0]
	e.waitPhase("crash", musterv1.PhaseRunning)

	// The next operator dies once it has decided: every write it makes
	// after its job's status (the decision) fails, as if it were gone.
	operator.stop()
	crashed := errors.New("operator killed after writing its decision")
	op, err := startOperatorWith(interceptWrites(e.ns, func(obj client.Object) error {
		if _, ok := obj.(*musterv1.TrainingJob); ok {
			return nil
		}
		return crashed
	}))
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	operator = op
	e.exit(&first, 1, "Error")
	decided := e.eventuallyJob("crash", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(e.task(j, "worker", 0).State).To(gomega.Equal(musterv1.TaskRestarting))
	})
	e.g.Expect(decided.Status.Restarts.Total).To(gomega.Equal(int32(1)))
	e.g.Consistently(func() string { return string(e.pod("crash-worker-0").UID) }, "1s", interval).
		Should(gomega.Equal(string(first.UID)), "nothing was acted on")

	// A healthy operator takes over from the written decision.
	operator.stop()
	op, err = startOperator()
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	operator = op
	replacement := e.waitPod("crash-worker-0", string(first.UID))
	e.run(replacement)
	got := e.waitPhase("crash", musterv1.PhaseRunning)
	e.g.Expect(got.Status.Restarts).To(gomega.Equal(musterv1.RestartCounts{Total: 1, Accountable: 1}))
	e.g.Expect(e.task(got, "worker", 0).Attempts).To(gomega.Equal(int32(2)))
}

// Volcano's PaddlePaddle pattern: when every trainer succeeds the job
// completes and the parameter servers are stopped; any failure restarts
// the job.
func TestFailureRules(t *testing.T) {
	e := newEnv(t)
	job := e.job("paddle").Role("pserver", 2).Role("trainer", 2).BackoffLimit(5).
		Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventTaskCompleted}, Roles: []string{"trainer"}, Action: musterv1.ActionCompleteJob}).
		Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed, musterv1.EventPodEvicted}, Action: musterv1.ActionRestartJob}).Obj()
	e.create(job)
	e.runAll("paddle", 4)
	e.exit(e.pod("paddle-pserver-1"), 1, "Error")
	e.eventuallyJob("paddle", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Attempt).To(gomega.Equal(int32(1)))
	})
	e.g.Eventually(func(g gomega.Gomega) {
		for _, p := range e.pods("paddle") {
			g.Expect(p.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, "1"))
		}
		g.Expect(e.pods("paddle")).To(gomega.HaveLen(4))
	}, timeout, interval).Should(gomega.Succeed())
	e.runAll("paddle", 4)
	e.exit(e.pod("paddle-trainer-0"), 0, "Completed")
	e.exit(e.pod("paddle-trainer-1"), 0, "Completed")
	got := e.waitPhase("paddle", musterv1.PhaseSucceeded)
	e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonPolicyCompleted))
	e.g.Eventually(func() int { return len(e.pods("paddle")) }, timeout, interval).Should(gomega.Equal(2), "only the trainers stay")
}

func TestUserClassificationRuleAndJobRetry(t *testing.T) {
	e := newEnv(t)
	job := e.job("rule").Role("worker", 1).RestartPolicy(musterv1.RestartPolicyNever).Obj()
	job.Spec.FailurePolicy.Classification = &musterv1.Classification{Rules: []musterv1.ClassificationRule{{
		ExitCodes: musterv1.CodeRange{Min: 42, Max: 42}, Class: musterv1.ClassPermanent, Code: 4242, Phrase: "BadDataset",
	}}}
	job.Spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}
	e.create(job)
	pod := e.runAll("rule", 1)[0]
	e.exit(&pod, 3, "Error")
	// Unknown failure: retried in a new attempt.
	e.eventuallyJob("rule", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Retries.Total).To(gomega.Equal(int32(1)))
	})
	second := e.waitPod("rule-worker-0", string(pod.UID))
	e.run(second)
	e.exit(second, 42, "Error")
	got := e.waitPhase("rule", musterv1.PhaseFailed)
	e.g.Expect(got.Status.Completion.Phrase).To(gomega.Equal("BadDataset"))
	e.g.Expect(*got.Status.Completion.Code).To(gomega.Equal(int32(4242)))
	e.g.Expect(got.Status.Completion.Message).To(gomega.ContainSubstring("not retried"))
	e.g.Expect(got.Status.Retries.Total).To(gomega.Equal(int32(1)))
}

// With a graceful deletion timeout, a pod stuck terminating (its node is
// gone) is force-deleted and replaced.
func TestGracefulDeletionTimeout(t *testing.T) {
	e := newEnv(t)
	job := e.job("gd").Role("worker", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.NodeName = "lost-node" // no kubelet will ever finish a graceful deletion
	}).Obj()
	job.Spec.Roles[0].GracefulDeletionTimeoutSeconds = new(int64(1))
	e.create(job)
	pod := e.runAll("gd", 1)[0]
	e.g.Expect(k8s.Delete(e.ctx(), &pod)).To(gomega.Succeed())
	start := time.Now()
	replacement := e.waitPod("gd-worker-0", string(pod.UID))
	e.g.Expect(time.Since(start)).To(gomega.BeNumerically("<", 25*time.Second), "well before the 30 s grace period")
	e.g.Expect(replacement.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelTaskAttempt, "2"))
}

// `muster restart`'s request: a new attempt of a running job, every pod
// made anew, the restart counted but not charged, and the request taken
// once.
func TestRestartRequestStartsANewAttempt(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("again").Role("worker", 2).BackoffLimit(0).Obj())
	pods := e.runAll("again", 2)
	e.waitPhase("again", musterv1.PhaseRunning)
	e.g.Expect(e.update("again", func(j *musterv1.TrainingJob) { j.Spec.Run.RestartRequest = "2026-11-24T02:00:00Z" })).To(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		now := e.pods("again")
		g.Expect(now).To(gomega.HaveLen(2))
		for i, p := range now {
			g.Expect(p.UID).NotTo(gomega.Equal(pods[i].UID), p.Name)
			g.Expect(p.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, "1"))
		}
	}, timeout, interval).Should(gomega.Succeed())
	e.runAll("again", 2)
	got := e.waitPhase("again", musterv1.PhaseRunning)
	e.g.Expect(got.Status.Attempt).To(gomega.Equal(int32(1)))
	e.g.Expect(got.Status.Restarts).To(gomega.Equal(musterv1.RestartCounts{Total: 1}))
	e.g.Expect(got.Status.RestartRequest).To(gomega.Equal("2026-11-24T02:00:00Z"))
}
