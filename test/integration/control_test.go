package integration

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func TestExecutionCreateStartStop(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("ex").Role("worker", 2).Execution(musterv1.ExecutionCreate).Obj())
	e.eventuallyJob("ex", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionCreated)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Reason).To(gomega.Equal(string(musterv1.ReasonHeld)))
	})
	e.g.Consistently(func() []corev1.Pod { return e.pods("ex") }, "1s", interval).Should(gomega.BeEmpty())

	e.g.Expect(e.update("ex", func(j *musterv1.TrainingJob) { j.Spec.Run.Execution = musterv1.ExecutionStart })).To(gomega.Succeed())
	e.runAll("ex", 2)
	e.waitPhase("ex", musterv1.PhaseRunning)

	e.g.Expect(e.update("ex", func(j *musterv1.TrainingJob) { j.Spec.Run.Execution = musterv1.ExecutionStop })).To(gomega.Succeed())
	got := e.waitPhase("ex", musterv1.PhaseFailed)
	e.g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonStopped))
	e.waitPodCount("ex", 0)

	err := e.update("ex", func(j *musterv1.TrainingJob) { j.Spec.Run.Execution = musterv1.ExecutionStart })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.run.execution may go from Create to any value, between Start and Suspend, and from either to Stop, which is final"))
}

func TestDebugModePodsSleep(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("dbg").Role("worker", 1).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.InitContainers = []corev1.Container{{Name: "fetch", Image: "busybox", Command: []string{"false"}}}
		p.Spec.Containers[0].Command = []string{"python3", "train.py"}
	}).Debug(musterv1.DebugPolicy{RunInitContainers: new(false)}).Obj())
	pod := e.waitPodCount("dbg", 1)[0]
	e.g.Expect(pod.Spec.Containers[0].Command).To(gomega.Equal([]string{"sleep", "inf"}))
	e.g.Expect(pod.Spec.InitContainers).To(gomega.BeEmpty())

	err := e.update("dbg", func(j *musterv1.TrainingJob) { j.Spec.Run.Debug = nil })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.run.debug is immutable"))
}

func TestDependsOnStartsWorkersAfterMasterRuns(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("dep").Role("master", 1).Role("worker", 2).DependsOn("master", musterv1.DependencyRunning).Obj())
	master := e.waitPodCount("dep", 1)[0]
	e.g.Expect(master.Name).To(gomega.Equal("dep-master-0"))
	got := e.eventuallyJob("dep", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(condition(j, musterv1.ConditionRunning)).NotTo(gomega.BeNil())
		g.Expect(condition(j, musterv1.ConditionRunning).Reason).To(gomega.Equal(string(musterv1.ReasonWaitingForRoles)))
	})
	e.g.Expect(condition(got, musterv1.ConditionRunning).Message).To(gomega.Equal("role worker waits for role master to be Running"))
	e.g.Consistently(func() []corev1.Pod { return e.pods("dep") }, "1s", interval).Should(gomega.HaveLen(1))
	e.run(&master)
	e.waitPodCount("dep", 3)
}

func TestInvalidDependencies(t *testing.T) {
	e := newEnv(t)
	job := e.job("bad").Role("worker", 1).DependsOn("chief", musterv1.DependencyRunning).Obj()
	err := k8s.Create(e.ctx(), job)
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.roles[].dependsOn[].role must name another role of the job"))

	// Order is the webhook's to check (TestWebhookRejectsWhatCELCannotSay).
}
