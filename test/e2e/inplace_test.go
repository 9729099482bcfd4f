package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// A gang restarts in place on the process node, which restarts containers
// as kubelet 1.36 does: a worker killed with SIGKILL is restarted alone by
// its container's restart rule, and the operator moves every pod of the
// job into the next attempt where it stands. The pods keep their UIDs and
// IPs, each new process sees the new attempt in its environment, and one
// restart is charged.
func TestAGangRestartsInPlace(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	marker := "muster-e2e-inplace-" + ns
	script := "import os, time; print('attempt=' + os.environ['MUSTER_ATTEMPT_ID'], flush=True); time.sleep(600)"
	job := testutil.MakeJob("ip", ns).Role("worker", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).
		RestartScope(musterv1.RestartScopeJob).BackoffLimit(3).
		Template(python(script, marker+"-{{MUSTER_TASK_INDEX}}")).Obj()
	job.Spec.FailurePolicy.RestartMode = musterv1.RestartModeInPlace
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "ip", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))

	type placed struct {
		uid types.UID
		ip  string
	}
	before := map[string]placed{}
	for i := range 3 {
		var pod corev1.Pod
		name := fmt.Sprintf("ip-worker-%d", i)
		g.Eventually(func(g gomega.Gomega) {
			g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod)).To(gomega.Succeed())
			g.Expect(pod.Status.PodIP).NotTo(gomega.BeEmpty())
		}, time.Minute, 500*time.Millisecond).Should(gomega.Succeed())
		before[name] = placed{pod.UID, pod.Status.PodIP}
	}

	// An end in the second its run began is taken for the run before's
	// (observe.InPlaceFailure): kill in a later second, as a real failure
	// comes.
	var victim corev1.Pod
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ip-worker-1"}, &victim)).To(gomega.Succeed())
	for _, w := range victim.Status.InitContainerStatuses {
		if w.State.Running != nil {
			began := w.State.Running.StartedAt.Time
			g.Eventually(func() bool { return time.Now().Truncate(time.Second).After(began) }, time.Minute, 50*time.Millisecond).Should(gomega.BeTrue())
		}
	}
	g.Expect(syscall.Kill(hostPID(g, marker+"-1"), syscall.SIGKILL)).To(gomega.Succeed())
	got := framework.WaitJob(g, c, ns, "ip", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Attempt).To(gomega.Equal(int32(1)))
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
	})
	g.Expect(got.Status.Restarts.Total).To(gomega.Equal(int32(1)))
	g.Expect(got.Status.Attempts).NotTo(gomega.BeEmpty())
	rec := got.Status.Attempts[len(got.Status.Attempts)-1]
	g.Expect(rec.PodRestarts).NotTo(gomega.BeNil())
	g.Expect(rec.PodRestarts.InPlace).To(gomega.Equal(int32(3)), "record %+v", rec)
	for name, was := range before {
		var pod corev1.Pod
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod)).To(gomega.Succeed())
		g.Expect(pod.UID).To(gomega.Equal(was.uid), "%s must not be re-created", name)
		g.Expect(pod.Status.PodIP).To(gomega.Equal(was.ip), "%s keeps its address", name)
		g.Eventually(func() (string, error) {
			raw, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: pod.Spec.Containers[0].Name}).Do(context.Background()).Raw()
			return string(raw), err
		}, time.Minute, time.Second).Should(gomega.ContainSubstring("attempt=1"), "%s runs the new attempt", name)
	}
}

// A pod deleted by hand cannot restart in place: it alone is re-created,
// and the rest of the gang restarts in place.
func TestAPodDeletedByHandIsRecreatedAndTheRestRestartInPlace(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	job := testutil.MakeJob("del", ns).Role("worker", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).
		RestartScope(musterv1.RestartScopeJob).BackoffLimit(3).Template(python("import time; time.sleep(600)")).Obj()
	job.Spec.FailurePolicy.RestartMode = musterv1.RestartModeInPlace
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "del", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	before := map[string]types.UID{}
	for i := range 3 {
		var pod corev1.Pod
		name := fmt.Sprintf("del-worker-%d", i)
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod)).To(gomega.Succeed())
		before[name] = pod.UID
	}
	g.Expect(c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "del-worker-0"}})).To(gomega.Succeed())

	framework.WaitJob(g, c, ns, "del", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Attempt).To(gomega.Equal(int32(1)))
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
	})
	for name, uid := range before {
		var pod corev1.Pod
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod)).To(gomega.Succeed())
		if name == "del-worker-0" {
			g.Expect(pod.UID).NotTo(gomega.Equal(uid), "the deleted pod is re-created")
			continue
		}
		g.Expect(pod.UID).To(gomega.Equal(uid), "%s restarts in place", name)
		g.Expect(pod.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, "1"))
	}
}
