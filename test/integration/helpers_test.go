package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

const (
	timeout  = 30 * time.Second
	interval = 50 * time.Millisecond
)

var nsCounter atomic.Int32

// env is one test's view of the cluster: its own namespace and gomega.
type env struct {
	t  *testing.T
	g  gomega.Gomega
	ns string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ns := fmt.Sprintf("t%d-%d", time.Now().UnixNano()%100000, nsCounter.Add(1))
	e := &env{t: t, g: gomega.NewWithT(t), ns: ns}
	e.g.Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
	return e
}

func (e *env) ctx() context.Context { return context.Background() }

func (e *env) job(name string) *testutil.JobBuilder { return testutil.MakeJob(name, e.ns) }

func (e *env) create(job *musterv1.TrainingJob) *musterv1.TrainingJob {
	e.t.Helper()
	e.g.Expect(k8s.Create(e.ctx(), job)).To(gomega.Succeed())
	return job
}

func (e *env) get(name string) *musterv1.TrainingJob {
	e.t.Helper()
	job := &musterv1.TrainingJob{}
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, job)).To(gomega.Succeed())
	return job
}

// update applies mutate to a fresh copy of the job and updates it, retrying
// when the operator's status writes race with it.
func (e *env) update(name string, mutate func(*musterv1.TrainingJob)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		job := e.get(name)
		mutate(job)
		return k8s.Update(e.ctx(), job)
	})
}

// replaceOperator stops the suite's operator for the rest of the test,
// which runs operators of its own, and starts it again once the test and
// its deferred calls have ended.
func (e *env) replaceOperator() {
	e.t.Helper()
	operator.stop()
	e.t.Cleanup(func() {
		op, err := startOperator()
		e.g.Expect(err).NotTo(gomega.HaveOccurred())
		operator = op
	})
}

// eventuallyJob waits until check passes on the job.
func (e *env) eventuallyJob(name string, check framework.JobCheck) *musterv1.TrainingJob {
	e.t.Helper()
	return framework.WaitJobEvery(e.g, k8s, e.ns, name, timeout, interval, check)
}

// waitPhase waits for the job's phase.
func (e *env) waitPhase(name string, phase musterv1.JobPhase) *musterv1.TrainingJob {
	e.t.Helper()
	return e.eventuallyJob(name, framework.PhaseIs(phase))
}

func condition(job *musterv1.TrainingJob, t musterv1.ConditionType) *metav1.Condition {
	return job.Status.Condition(t)
}

func (e *env) pods(jobName string) []corev1.Pod {
	e.t.Helper()
	var list corev1.PodList
	e.g.Expect(k8s.List(e.ctx(), &list, client.InNamespace(e.ns),
		client.MatchingLabels{musterv1.LabelJobName: jobName})).To(gomega.Succeed())
	return list.Items
}

// waitPod waits for the pod to exist, with a UID other than notUID.
func (e *env) waitPod(name string, notUID string) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{}
	e.g.Eventually(func(g gomega.Gomega) {
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, pod)).To(gomega.Succeed())
		g.Expect(string(pod.UID)).NotTo(gomega.Equal(notUID))
	}, timeout, interval).Should(gomega.Succeed())
	return pod
}

func (e *env) waitPodCount(jobName string, n int) []corev1.Pod {
	e.t.Helper()
	var pods []corev1.Pod
	e.g.Eventually(func(g gomega.Gomega) {
		pods = e.pods(jobName)
		g.Expect(pods).To(gomega.HaveLen(n))
	}, timeout, interval).Should(gomega.Succeed())
	return pods
}

func (e *env) setStatus(pod *corev1.Pod, status corev1.PodStatus) {
	e.t.Helper()
	e.g.Eventually(func() error {
		fresh := &corev1.Pod{}
		if err := k8s.Get(e.ctx(), client.ObjectKeyFromObject(pod), fresh); err != nil {
			return err
		}
		fresh.Status = status
		return k8s.Status().Update(e.ctx(), fresh)
	}, timeout, interval).Should(gomega.Succeed())
}

func (e *env) run(pod *corev1.Pod) {
	e.setStatus(pod, corev1.PodStatus{Phase: corev1.PodRunning})
}

func (e *env) exit(pod *corev1.Pod, code int32, reason string) {
	e.setStatus(pod, testutil.ExitedStatus(code, reason, time.Now()))
}

// runAll waits for n pods of the job and marks them all running.
func (e *env) runAll(jobName string, n int) []corev1.Pod {
	e.t.Helper()
	pods := e.waitPodCount(jobName, n)
	for i := range pods {
		e.run(&pods[i])
	}
	return pods
}

func (e *env) pod(name string) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{}
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, pod)).To(gomega.Succeed())
	return pod
}

// task is one task of the job's status as the operator reads it: its pod
// name, and the UID of the pod that name finds now when status leaves it
// out (a pending, running or restarting task's current pod).
func (e *env) task(job *musterv1.TrainingJob, role string, index int32) musterv1.TaskStatus {
	for _, rs := range job.Status.Roles {
		t, ok := rs.Task(index)
		if !ok || rs.Name != role {
			continue
		}
		t.Pod = objects.PodName(job.Name, role, index)
		pod := &corev1.Pod{}
		live := t.State == musterv1.TaskPending || t.State == musterv1.TaskRunning || t.State == musterv1.TaskRestarting
		if live && t.PodUID == "" && k8s.Get(e.ctx(), client.ObjectKey{Namespace: job.Namespace, Name: t.Pod}, pod) == nil &&
			(t.LastExit == nil || t.LastExit.PodUID != pod.UID) {
			t.PodUID = pod.UID
		}
		return t
	}
	e.t.Fatalf("no task %s/%d in status %+v", role, index, job.Status)
	return musterv1.TaskStatus{}
}
