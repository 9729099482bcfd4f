package integration

import (
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// tensorBoard reads the job's TensorBoard Deployment and Service; each is
// nil when absent.
func (e *env) tensorBoard(g gomega.Gomega, job string) (*appsv1.Deployment, *corev1.Service) {
	key := client.ObjectKey{Namespace: e.ns, Name: job + "-tensorboard"}
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	err := k8s.Get(e.ctx(), key, dep)
	if apierrors.IsNotFound(err) {
		dep = nil
	} else {
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	err = k8s.Get(e.ctx(), key, svc)
	if apierrors.IsNotFound(err) {
		svc = nil
	} else {
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}
	return dep, svc
}

// expectTensorBoardReady waits for the job's TensorBoardReady condition to
// have status and reason.
func (e *env) expectTensorBoardReady(job string, status metav1.ConditionStatus, reason string) *musterv1.TrainingJob {
	return e.eventuallyJob(job, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionTensorBoardReady)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(status))
		g.Expect(c.Reason).To(gomega.Equal(reason))
	})
}

// A job's TensorBoard: a Deployment and Service owned by the job, the
// address in status, ready when its pod is, brought up to date when
// spec.tensorboard changes, kept after the job ends for its TTL and then
// deleted for good.
func TestTensorBoardLifecycle(t *testing.T) {
	e := newEnv(t)
	job := e.create(e.job("tb").Role("worker", 1).TensorBoard("runs", 3*time.Second).Obj())

	var dep *appsv1.Deployment
	e.g.Eventually(func(g gomega.Gomega) {
		var svc *corev1.Service
		dep, svc = e.tensorBoard(g, "tb")
		g.Expect(dep).NotTo(gomega.BeNil())
		g.Expect(svc).NotTo(gomega.BeNil())
		g.Expect(metav1.IsControlledBy(dep, job)).To(gomega.BeTrue())
		g.Expect(metav1.IsControlledBy(svc, job)).To(gomega.BeTrue())
	}, timeout, interval).Should(gomega.Succeed())
	got := e.expectTensorBoardReady("tb", metav1.ConditionFalse, string(musterv1.ReasonStarting))
	e.g.Expect(got.Status.TensorBoard).To(gomega.Equal(musterv1.TensorBoardStatus{Address: "http://tb-tensorboard." + e.ns + ".svc:6006"}))
	mount := dep.Spec.Template.Spec.Containers[0].VolumeMounts[0]
	e.g.Expect(mount.SubPath).To(gomega.Equal("runs"))
	e.g.Expect(mount.ReadOnly).To(gomega.BeTrue())

	// This API server runs no Deployment controller: its status is set as
	// the controller would once the pod is ready.
	dep.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	e.g.Expect(k8s.Status().Update(e.ctx(), dep)).To(gomega.Succeed())
	e.expectTensorBoardReady("tb", metav1.ConditionTrue, string(musterv1.ReasonReady))

	newCommand := []string{"tensorboard", "--logdir=$(MUSTER_TENSORBOARD_LOGDIR)", "--bind_all", "--port=6006", "--reload_interval=5"}
	e.g.Expect(e.update("tb", func(j *musterv1.TrainingJob) { j.Spec.TensorBoard.Command = newCommand })).To(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		dep, _ := e.tensorBoard(g, "tb")
		g.Expect(dep).NotTo(gomega.BeNil())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Command).To(gomega.Equal(newCommand))
	}, timeout, interval).Should(gomega.Succeed())

	// The job ends; its TensorBoard outlives it by the TTL, then goes.
	pod := e.runAll("tb", 1)[0]
	e.exit(&pod, 0, "Completed")
	finished := e.waitPhase("tb", musterv1.PhaseSucceeded)
	dep, _ = e.tensorBoard(e.g, "tb")
	e.g.Expect(dep).NotTo(gomega.BeNil(), "removed before its TTL")
	e.g.Eventually(func(g gomega.Gomega) {
		dep, svc := e.tensorBoard(g, "tb")
		g.Expect(dep).To(gomega.BeNil())
		g.Expect(svc).To(gomega.BeNil())
	}, timeout, interval).Should(gomega.Succeed())
	removed := e.expectTensorBoardReady("tb", metav1.ConditionFalse, string(musterv1.ReasonTTLExpired))
	e.g.Expect(removed.Status.TensorBoard.Address).To(gomega.BeEmpty())
	cond := condition(removed, musterv1.ConditionTensorBoardReady)
	e.g.Expect(cond.LastTransitionTime.Sub(finished.Status.CompletionTime.Time)).To(gomega.BeNumerically(">=", 2*time.Second),
		"removed %v after the job finished, the TTL is 3s", cond.LastTransitionTime.Sub(finished.Status.CompletionTime.Time))
	// The job itself stays: it has no TTL of its own.
	e.g.Consistently(func(g gomega.Gomega) {
		dep, svc := e.tensorBoard(g, "tb")
		g.Expect(dep).To(gomega.BeNil())
		g.Expect(svc).To(gomega.BeNil())
	}, 2*time.Second, interval).Should(gomega.Succeed(), "a removed TensorBoard was made again")
	e.get("tb")
}

// A Service of someone else's holds the TensorBoard's name: the TensorBoard
// is Blocked with an event naming it while the job trains; once the name
// is free the TensorBoard is made; removing spec.tensorboard removes it.
func TestTensorBoardNameTaken(t *testing.T) {
	e := newEnv(t)
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "nt-tensorboard", Namespace: e.ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	e.g.Expect(k8s.Create(e.ctx(), foreign)).To(gomega.Succeed())
	e.create(e.job("nt").Role("worker", 2).TensorBoard("", -1).Obj())
	got := e.expectTensorBoardReady("nt", metav1.ConditionFalse, string(musterv1.ReasonNameTaken))
	e.g.Expect(condition(got, musterv1.ConditionTensorBoardReady).Message).To(gomega.ContainSubstring("Service nt-tensorboard cannot be created"))
	e.g.Eventually(func(g gomega.Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(e.ctx(), &list, client.InNamespace(e.ns))).To(gomega.Succeed())
		g.Expect(slices.ContainsFunc(list.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Name == "nt" && ev.Reason == string(musterv1.ReasonNameTaken) && ev.Type == corev1.EventTypeWarning
		})).To(gomega.BeTrue())
	}, timeout, interval).Should(gomega.Succeed())
	// The training is not held by it.
	e.runAll("nt", 2)
	e.waitPhase("nt", musterv1.PhaseRunning)

	e.g.Expect(k8s.Delete(e.ctx(), foreign)).To(gomega.Succeed())
	job := e.get("nt")
	e.g.Eventually(func(g gomega.Gomega) {
		_, svc := e.tensorBoard(g, "nt")
		g.Expect(svc).NotTo(gomega.BeNil())
		g.Expect(metav1.IsControlledBy(svc, job)).To(gomega.BeTrue())
	}, timeout, interval).Should(gomega.Succeed())
	e.expectTensorBoardReady("nt", metav1.ConditionFalse, string(musterv1.ReasonStarting))

	e.g.Expect(e.update("nt", func(j *musterv1.TrainingJob) { j.Spec.TensorBoard = musterv1.TensorBoard{} })).To(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		dep, svc := e.tensorBoard(g, "nt")
		g.Expect(dep).To(gomega.BeNil())
		g.Expect(svc).To(gomega.BeNil())
	}, timeout, interval).Should(gomega.Succeed())
	left := e.eventuallyJob("nt", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(condition(j, musterv1.ConditionTensorBoardReady)).To(gomega.BeNil())
	})
	e.g.Expect(left.Status.TensorBoard.Address).To(gomega.BeEmpty())
}
