package integration

import (
	"fmt"
	"testing"

	"github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

const holdFinalizer = "test.muster.dev/hold"

// release lets a terminating pod go.
func (e *env) release(name string) {
	e.t.Helper()
	pod := e.pod(name)
	e.g.Expect(pod.DeletionTimestamp).NotTo(gomega.BeNil(), "%s is not terminating", name)
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Finalizers = nil
	e.g.Expect(k8s.Patch(e.ctx(), pod, patch)).To(gomega.Succeed())
}

// rescale patches role 0's replicas and minFailed in one update,
// guarded by a test of the role's name, like FrameworkController's
// examples.
func (e *env) rescale(job string, replicas, minFailed int32) {
	e.t.Helper()
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/roles/0/name","value":"a"},`+
		`{"op":"add","path":"/spec/roles/0/replicas","value":%d},`+
		`{"op":"replace","path":"/spec/roles/0/completion/minFailed","value":%d}]`, replicas, minFailed)
	obj := &musterv1.TrainingJob{}
	obj.Namespace, obj.Name = e.ns, job
	e.g.Expect(k8s.Patch(e.ctx(), obj, client.RawPatch("application/json-patch+json", []byte(patch)))).To(gomega.Succeed())
}

func (e *env) notFailed(job string) {
	e.t.Helper()
	e.g.Expect(e.get(job).Status.Phase).NotTo(gomega.BeElementOf(musterv1.PhaseFailed, musterv1.PhaseSucceeded))
}

// TestRescaleBasic replays FrameworkController's rescalebasic walkthrough
// (4 tasks, minFailed 4, minSucceeded 1) against a real API server. Pods
// carry a finalizer so the test decides when a deleted pod is gone.
func TestRescaleBasic(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("a").Role("a", 4).RestartPolicy(musterv1.RestartPolicyNever).Completion(1, 4).
		Template(func(p *corev1.PodTemplateSpec) { p.Finalizers = []string{holdFinalizer} }).Obj())
	e.runAll("a", 4)
	defer func() {
		for _, p := range e.pods("a") {
			_ = k8s.Patch(e.ctx(), &p, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
		}
	}()

	// Steps 1-4: a-2 and a-3 fail; scaling to 2 with minFailed 2 in the
	// same update must not fail the job (SG1).
	for _, name := range []string{"a-a-2", "a-a-3"} {
		e.exit(e.pod(name), 1, "Error")
	}
	e.eventuallyJob("a", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Roles[0].Failed).To(gomega.Equal(int32(2)))
	})
	e.rescale("a", 2, 2)
	e.eventuallyJob("a", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		t2, _ := j.Status.Roles[0].Task(2)
		t3, _ := j.Status.Roles[0].Task(3)
		g.Expect(t2.DeletionPending).To(gomega.BeTrue())
		g.Expect(t3.DeletionPending).To(gomega.BeTrue())
	})
	e.notFailed("a")
	e.g.Eventually(func() bool { return e.pod("a-a-3").DeletionTimestamp != nil }, timeout, interval).Should(gomega.BeTrue())
	e.release("a-a-2")
	e.release("a-a-3")
	e.eventuallyJob("a", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Roles[0].TaskCount()).To(gomega.Equal(int32(2)))
	})
	e.notFailed("a")

	// Steps 5-8: up to 4; down to 2; while a-2 and a-3 are
	// deletion-pending, up to 3. a-2, gone already, is replaced by a new
	// instance at once; a-3 is deleted eventually.
	e.rescale("a", 4, 4)
	e.waitPodCount("a", 4)
	e.runAll("a", 4)
	e.waitPhase("a", musterv1.PhaseRunning)
	e.rescale("a", 2, 2)
	e.eventuallyJob("a", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		t3, _ := j.Status.Roles[0].Task(3)
		g.Expect(t3.DeletionPending).To(gomega.BeTrue())
	})
	e.g.Eventually(func() bool { return e.pod("a-a-2").DeletionTimestamp != nil }, timeout, interval).Should(gomega.BeTrue())
	old2 := e.pod("a-a-2").UID
	e.release("a-a-2")
	e.rescale("a", 3, 3)
	fresh := e.waitPod("a-a-2", string(old2))
	e.eventuallyJob("a", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		t2, _ := j.Status.Roles[0].Task(2)
		t3, _ := j.Status.Roles[0].Task(3)
		g.Expect(t2.DeletionPending).To(gomega.BeFalse())
		g.Expect(t2.State).To(gomega.Equal(musterv1.TaskPending), "a new instance: %s", fresh.UID)
		g.Expect(t3.DeletionPending).To(gomega.BeTrue(), "a-3 is not reused while it terminates")
	})
	e.notFailed("a")

	// Steps 9-12: up to 5: a-4 is added at once, a-3 replaced once gone.
	e.rescale("a", 5, 5)
	e.g.Eventually(func() bool { return hasPod(e.pods("a"), "a-a-4") }, timeout, interval).Should(gomega.BeTrue())
	old3 := e.pod("a-a-3").UID
	e.release("a-a-3")
	e.waitPod("a-a-3", string(old3))
	e.runAll("a", 5)
	got := e.waitPhase("a", musterv1.PhaseRunning)
	e.g.Expect(got.Status.Ready).To(gomega.Equal("5/5"))
	for i := range got.Status.Roles[0].TaskCount() {
		task, _ := got.Status.Roles[0].Task(i)
		e.g.Expect(task.DeletionPending).To(gomega.BeFalse())
	}
	e.g.Expect(got.Status.Restarts.Total).To(gomega.BeZero(), "a rescale is not a restart")
}

// The /scale subresource sizes the scalable role, as kubectl scale and a
// HorizontalPodAutoscaler do, within minReplicas and maxReplicas.
func TestScaleSubresource(t *testing.T) {
	e := newEnv(t)
	job := e.job("sc").Role("worker", 2).Elastic(1, 3).Obj()
	job.Spec.Runtime.PyTorch.Elastic.Rendezvous.Store = musterv1.StoreWorker
	e.create(job)
	e.runAll("sc", 2)
	job = e.get("sc")
	scale := &autoscalingv1.Scale{}
	e.g.Eventually(func(g gomega.Gomega) {
		g.Expect(k8s.SubResource("scale").Get(e.ctx(), job, scale)).To(gomega.Succeed())
		g.Expect(scale.Status.Replicas).To(gomega.Equal(int32(2)))
		g.Expect(scale.Status.Selector).To(gomega.Equal("muster.dev/job-name=sc,muster.dev/role=worker"))
	}, timeout, interval).Should(gomega.Succeed())

	scale.Spec.Replicas = 3
	scale.ResourceVersion = ""
	e.g.Expect(k8s.SubResource("scale").Update(e.ctx(), job, client.WithSubResourceBody(scale))).To(gomega.Succeed())
	e.waitPodCount("sc", 3)
	e.eventuallyJob("sc", func(g gomega.Gomega, j *musterv1.TrainingJob) { g.Expect(j.Status.Replicas).To(gomega.Equal(int32(3))) })

	scale.Spec.Replicas = 4
	scale.ResourceVersion = ""
	err := k8s.SubResource("scale").Update(e.ctx(), job, client.WithSubResourceBody(scale))
	e.g.Expect(err).To(gomega.HaveOccurred())
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.scaling.replicas must lie between the scalable roles' minReplicas and maxReplicas"))

	err = e.update("sc", func(j *musterv1.TrainingJob) { j.Spec.Roles[0].Replicas = new(int32(1)) })
	e.g.Expect(err).To(gomega.HaveOccurred())
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.roles[].replicas must be unset for a scalable role"))
}

// Several elastic roles make one world: /scale sizes them together, split
// by their scaling weights within their bounds.
func TestScaleSplitsAcrossElasticRoles(t *testing.T) {
	e := newEnv(t)
	job := e.job("pools").Role("a100", 1).Elastic(1, 4).Role("v100", 1).Elastic(0, 6).Obj()
	job.Spec.Runtime.PyTorch.Elastic.Rendezvous.Store = musterv1.StoreWorker
	job.Spec.Scaling.Roles[1].Weight = 2
	e.create(job)
	e.waitPodCount("pools", 2)

	scale := &autoscalingv1.Scale{}
	obj := e.get("pools")
	e.g.Expect(k8s.SubResource("scale").Get(e.ctx(), obj, scale)).To(gomega.Succeed())
	scale.Spec.Replicas, scale.ResourceVersion = 7, ""
	e.g.Expect(k8s.SubResource("scale").Update(e.ctx(), obj, client.WithSubResourceBody(scale))).To(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		count := map[string]int{}
		for _, p := range e.pods("pools") {
			count[p.Labels[musterv1.LabelRole]]++
			g.Expect(p.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelScalable, "true"))
		}
		g.Expect(count).To(gomega.Equal(map[string]int{"a100": 3, "v100": 4}), "7 split 1:2 over min 1 and min 0")
	}, timeout, interval).Should(gomega.Succeed())
	got := e.eventuallyJob("pools", func(g gomega.Gomega, j *musterv1.TrainingJob) { g.Expect(j.Status.Replicas).To(gomega.Equal(int32(7))) })
	e.g.Expect(got.Status.Selector).To(gomega.Equal("muster.dev/job-name=pools,muster.dev/scalable=true"))

	scale.Spec.Replicas, scale.ResourceVersion = 11, ""
	err := k8s.SubResource("scale").Update(e.ctx(), obj, client.WithSubResourceBody(scale))
	e.g.Expect(err).To(gomega.HaveOccurred(), "4 + 6 is the most")
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("each summed over spec.scaling.roles"))
}
