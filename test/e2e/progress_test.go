package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// hangScript reports a step a second through examples/progress; its first
// attempt hangs at step 5, as a job whose collective waits for a peer
// that will never come; the next finishes its 12 steps.
const hangScript = `
import os, time, muster_progress
first = os.environ["MUSTER_ATTEMPT_ID"] == "0"
for step in range(1, 13):
    muster_progress.report(step=step, total_steps=12, loss=1.0 / step)
    if first and step == 5:
        print("hanging", flush=True)
        time.sleep(3600)
    time.sleep(1)
muster_progress.done()
print("finished", flush=True)
`

// A job whose reported progress stops is Stalled after
// spec.progress.stallSeconds, and its Stalled rule restarts it; the
// restarted job reports again and ends at 100%.
func TestStalledJobIsRestarted(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	helper, err := os.ReadFile(filepath.Join(cluster.Root, "examples", "progress", "muster_progress.py"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hang"},
		Data:       map[string]string{"train.py": hangScript, "muster_progress.py": string(helper)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	job := testutil.MakeJob("hang", ns).Role("worker", 1).RestartPolicy(musterv1.RestartPolicyNever).BackoffLimit(1).
		Progress(musterv1.DefaultProgressPort, 60).
		Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventStalled}, Action: musterv1.ActionRestartJob}).
		Template(func(t *corev1.PodTemplateSpec) {
			t.Spec.TerminationGracePeriodSeconds = new(int64(2))
			t.Spec.Containers = []corev1.Container{{
				Name: "main", Image: image, Command: []string{"python3", "-u", "/opt/train/train.py"},
				Env:          []corev1.EnvVar{{Name: "PYTHONPATH", Value: "/opt/train"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "code", MountPath: "/opt/train"}},
			}}
			t.Spec.Volumes = []corev1.Volume{{Name: "code", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hang"}}}}}
		}).Obj()
	g.Expect(c.Create(ctx, job)).To(gomega.Succeed())
	waitForLog(g, ns, "hang-worker-0", "hanging")
	hung := time.Now()

	stalled := framework.WaitJob(g, c, ns, "hang", 3*time.Minute, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Attempt).To(gomega.Equal(int32(1)), "the Stalled rule restarts the job")
	})
	t.Logf("restarted %s after the program hung", time.Since(hung).Round(time.Second))
	g.Expect(stalled.Status.Progress).NotTo(gomega.BeNil())
	g.Expect(*stalled.Status.Progress.Step).To(gomega.BeNumerically(">=", 1))

	got := framework.WaitJob(g, c, ns, "hang", 2*time.Minute, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded))
		g.Expect(j.Status.Progress).NotTo(gomega.BeNil())
		g.Expect(j.Status.Progress.Percent).To(gomega.HaveValue(gomega.Equal(int32(100))))
	})
	g.Expect(got.Status.Restarts.Total).To(gomega.Equal(int32(1)))
	g.Expect(got.Status.Condition(musterv1.ConditionStalled)).To(gomega.BeNil(), "a finished job is not Stalled")
	var events corev1.EventList
	g.Expect(c.List(ctx, &events, client.InNamespace(ns))).To(gomega.Succeed())
	stalls := 0
	for _, e := range events.Items {
		if e.Reason == string(musterv1.EventReasonStalled) && e.InvolvedObject.Name == "hang" {
			stalls++
		}
	}
	g.Expect(stalls).To(gomega.Equal(1), "one Stalled event")
}
