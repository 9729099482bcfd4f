package integration

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// TestRestartPolicies fails one pod per case and checks what the operator
// makes of it.
func TestRestartPolicies(t *testing.T) {
	cases := map[string]struct {
		policy          musterv1.RestartPolicy
		code            int32
		reason          string
		podReason       string
		wantReplaced    bool
		wantAccountable int32
		wantPhase       musterv1.JobPhase
		wantReason      musterv1.ConditionReason
	}{
		"OnFailure replaces a failed pod": {
			policy: musterv1.RestartPolicyOnFailure, code: 1, reason: "Error",
			wantReplaced: true, wantAccountable: 1,
		},
		"ExitCode replaces a SIGKILLed pod": {
			policy: musterv1.RestartPolicyExitCode, code: 137, reason: "Error",
			wantReplaced: true, wantAccountable: 1,
		},
		"ExitCode replaces an OOM-killed pod": {
			policy: musterv1.RestartPolicyExitCode, code: 1, reason: "OOMKilled",
			wantReplaced: true, wantAccountable: 1,
		},
		"ExitCode replaces an evicted pod without counting": {
			policy: musterv1.RestartPolicyExitCode, code: 1, reason: "Error", podReason: "Evicted",
			wantReplaced: true, wantAccountable: 0,
		},
		"ExitCode fails the job at once on a permanent exit": {
			policy: musterv1.RestartPolicyExitCode, code: 1, reason: "Error",
			wantPhase: musterv1.PhaseFailed, wantReason: musterv1.ReasonPermanentExitCode,
		},
		"Never leaves the task failed and the completion policy fails the job": {
			policy: musterv1.RestartPolicyNever, code: 137, reason: "Error",
			wantPhase: musterv1.PhaseFailed, wantReason: musterv1.ReasonCompletionPolicy,
		},
		"Always replaces a pod that succeeded": {
			policy: musterv1.RestartPolicyAlways, code: 0, reason: "Completed",
			wantReplaced: true, wantAccountable: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.create(e.job("rp").Role("worker", 2).RestartPolicy(tc.policy).BackoffLimit(5).Obj())
			pods := e.runAll("rp", 2)
			e.waitPhase("rp", musterv1.PhaseRunning)
			status := exitStatus(tc.code, tc.reason)
			status.Reason = tc.podReason
			e.setStatus(&pods[1], status)

			if !tc.wantReplaced {
				got := e.waitPhase("rp", tc.wantPhase)
				e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(tc.wantReason))
				e.g.Expect(*got.Status.Completion.Index).To(gomega.Equal(int32(1)))
				e.g.Expect(got.Status.Restarts.Total).To(gomega.BeZero())
				e.g.Expect(condition(got, musterv1.ConditionFailed).Message).To(gomega.ContainSubstring("rp-worker-1"))
				// The other, still running, pod is stopped.
				e.g.Eventually(func() bool { return hasPod(e.pods("rp"), "rp-worker-0") }, timeout, interval).Should(gomega.BeFalse())
				return
			}
			replacement := e.waitPod("rp-worker-1", string(pods[1].UID))
			e.g.Expect(replacement.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelTaskAttempt, "2"))
			e.run(replacement)
			got := e.eventuallyJob("rp", func(g gomega.Gomega, j *musterv1.TrainingJob) {
				g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
				g.Expect(e.task(j, "worker", 1).PodUID).To(gomega.Equal(replacement.UID))
			})
			e.g.Expect(got.Status.Restarts.Total).To(gomega.Equal(int32(1)))
			e.g.Expect(got.Status.Restarts.Accountable).To(gomega.Equal(tc.wantAccountable))
			task := e.task(got, "worker", 1)
			e.g.Expect(task.Attempts).To(gomega.Equal(int32(2)))
			e.g.Expect(task.Restarts).To(gomega.Equal(int32(1)))
			e.g.Expect(task.LastExit.Code).To(gomega.Equal(tc.code))
			e.g.Expect(task.LastExit.PodUID).To(gomega.Equal(pods[1].UID))
		})
	}
}

func exitStatus(code int32, reason string) corev1.PodStatus {
	return testutil.ExitedStatus(code, reason, time.Now())
}

func hasPod(pods []corev1.Pod, name string) bool {
	for _, p := range pods {
		if p.Name == name {
			return true
		}
	}
	return false
}

func TestBackoffLimitFailsJobWithReason(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("bo").Role("worker", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(1).Obj())
	first := e.runAll("bo", 1)[0]
	e.exit(&first, 2, "Error")
	second := e.waitPod("bo-worker-0", string(first.UID))
	e.run(second)
	e.eventuallyJob("bo", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(e.task(j, "worker", 0).PodUID).To(gomega.Equal(second.UID))
	})
	e.exit(second, 2, "Error")
	got := e.waitPhase("bo", musterv1.PhaseFailed)
	e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonBackoffLimitExceeded))
	e.g.Expect(got.Status.Completion.Message).To(gomega.ContainSubstring("spec.failurePolicy.backoffLimit"))
	e.g.Expect(got.Status.Restarts.Accountable).To(gomega.Equal(int32(1)))
	// A finished job never makes another pod.
	e.g.Consistently(func() string { return string(e.pod("bo-worker-0").UID) }, "1s", interval).
		Should(gomega.Equal(string(second.UID)))
}

// A pod deleted by someone else is replaced without counting.
func TestExternallyDeletedPodIsReplaced(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("ext").Role("worker", 2).BackoffLimit(0).Obj())
	pods := e.runAll("ext", 2)
	e.waitPhase("ext", musterv1.PhaseRunning)
	e.g.Expect(k8s.Delete(e.ctx(), &pods[0])).To(gomega.Succeed())
	replacement := e.waitPod("ext-worker-0", string(pods[0].UID))
	e.run(replacement)
	got := e.eventuallyJob("ext", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
		g.Expect(e.task(j, "worker", 0).PodUID).To(gomega.Equal(replacement.UID))
	})
	e.g.Expect(got.Status.Restarts.Total).To(gomega.Equal(int32(1)))
	e.g.Expect(got.Status.Restarts.Accountable).To(gomega.BeZero())
	e.g.Expect(e.task(got, "worker", 0).LastExit.Reason).To(gomega.Equal("PodDeleted"))
}
