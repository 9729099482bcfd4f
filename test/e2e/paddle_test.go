package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// Volcano's Paddle CTR job (seed 004), as examples/volcano-paddle writes
// it: 2 pservers and 2 trainers gang-scheduled by Volcano, the project's
// own parameter-server program exchanging gradients over TCP with the
// PADDLE_* wiring, completed when the trainers are done, trainer 0's
// progress reports ending at 100%.
func TestVolcanoPaddleExampleCompletes(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	g.Expect(c.Create(context.Background(), paddleExample(g, ns))).To(gomega.Succeed())

	got := framework.WaitJob(g, c, ns, "ctr-volcano", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Completion).NotTo(gomega.BeNil())
	g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonPolicyCompleted), "completion: %+v", got.Status.Completion)
	g.Expect(got.Status.Scheduling).NotTo(gomega.BeNil())
	g.Expect(got.Status.Scheduling.Backend).To(gomega.Equal(musterv1.GangVolcano))
	// The trainers really trained: the loss fell over the exchanged steps.
	for _, trainer := range []string{"ctr-volcano-trainer-0", "ctr-volcano-trainer-1"} {
		pod := framework.GetPod(g, cs, ns, trainer)
		g.Expect(pod.Spec.SchedulerName).To(gomega.Equal("volcano"))
		g.Expect(pod.Spec.NodeName).NotTo(gomega.HavePrefix("kwok-"), "a real pod on a fake node: %s", framework.DescribePod(cs, pod))
		raw, err := cs.CoreV1().Pods(ns).GetLogs(trainer, &corev1.PodLogOptions{Container: "trainer"}).Do(context.Background()).Raw()
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%s", framework.DescribePod(cs, pod))
		out := string(raw)
		var first, last float64
		var n int
		g.Expect(out).To(gomega.ContainSubstring(" done: loss "), "%s's log:\n%s", trainer, out)
		_, err = fmt.Sscanf(out[strings.LastIndex(out, "trainer "):], "trainer %d done: loss %f -> %f", &n, &first, &last)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%s's log:\n%s", trainer, out)
		g.Expect(last).To(gomega.BeNumerically("<", first), "%s's log:\n%s", trainer, out)
	}
	g.Expect(got.Status.Progress).NotTo(gomega.BeNil())
	g.Expect(got.Status.Progress.Percent).To(gomega.HaveValue(gomega.Equal(int32(100))), "progress %+v", got.Status.Progress)
	g.Expect(got.Status.Progress.Reporter).To(gomega.Equal("ctr-volcano-trainer-0"))
	g.Expect(got.Status.Progress.Metrics).To(gomega.ContainElement(gomega.HaveField("Name", "loss")), "progress %+v", got.Status.Progress)
}

// paddleExample is examples/volcano-paddle's job in namespace ns, with its
// program's and the progress helper's ConfigMaps created there.
func paddleExample(g gomega.Gomega, ns string) *musterv1.TrainingJob {
	c := cluster.Client
	dir := filepath.Join("..", "..", "examples", "volcano-paddle")
	for name, file := range map[string]string{"ctr-volcano-code": filepath.Join(dir, "ps.py"), "muster-progress": filepath.Join(dir, "..", "progress", "muster_progress.py")} {
		code, err := os.ReadFile(file)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{filepath.Base(file): string(code)}}
		g.Expect(c.Create(context.Background(), cm)).To(gomega.Succeed())
	}
	data, err := os.ReadFile(filepath.Join(dir, "trainingjob.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	job := &musterv1.TrainingJob{}
	g.Expect(yaml.UnmarshalStrict(data, job)).To(gomega.Succeed())
	job.Namespace = ns
	return job
}

// A parameter server killed mid-run fails its pod; the example's rule
// (PodFailed -> RestartJob, as Volcano's policy) restarts the whole job as
// a new attempt, which trains to the end.
func TestKilledParameterServerRestartsThePaddleJob(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	g.Expect(c.Create(context.Background(), longPaddleExample(g, ns))).To(gomega.Succeed())
	killParameterServerMidRun(g, ns)

	got := framework.WaitJob(g, c, ns, "ctr-volcano", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Attempt).To(gomega.Equal(int32(1)), "one new attempt")
	g.Expect(got.Status.Attempts).NotTo(gomega.BeEmpty())
	g.Expect(got.Status.Attempts[0].Completion.Reason).To(gomega.Equal(musterv1.ReasonJobRestarting))
	g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonPolicyCompleted))
}

// The same job restarting in place under Volcano: the killed parameter
// server's container is restarted alone by its rule, the rule restarts
// the job, and every pod moves into the new attempt where it stands,
// keeping the Volcano gang that placed it; the job trains to the end.
func TestAVolcanoPaddleJobRestartsInPlace(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	job := longPaddleExample(g, ns)
	job.Spec.FailurePolicy.RestartMode = musterv1.RestartModeInPlace
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	before := killParameterServerMidRun(g, ns)
	g.Expect(before).To(gomega.HaveLen(4))

	// Every pod runs the new attempt where it stood: the same pods, moved.
	g.Eventually(func(g gomega.Gomega) {
		var pods corev1.PodList
		g.Expect(c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{musterv1.LabelJobName: "ctr-volcano"})).To(gomega.Succeed())
		g.Expect(pods.Items).To(gomega.HaveLen(4))
		for _, p := range pods.Items {
			g.Expect(p.UID).To(gomega.Equal(before[p.Name]), "%s must not be re-created", p.Name)
			g.Expect(p.Labels[musterv1.LabelJobAttempt]).NotTo(gomega.Equal("0"), "%s", p.Name)
		}
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())

	got := framework.WaitJob(g, c, ns, "ctr-volcano", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Attempt).To(gomega.BeNumerically(">=", 1))
	g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonPolicyCompleted))
	g.Expect(got.Status.Attempts[0].PodRestarts).NotTo(gomega.BeNil())
	g.Expect(got.Status.Attempts[0].PodRestarts.InPlace).To(gomega.Equal(int32(4)), "attempt 0: %+v", got.Status.Attempts[0])
	g.Expect(got.Status.Scheduling.PodGroup).To(gomega.Equal("ctr-volcano-0"), "the gang that placed the pods places the attempts they restarted into")
}

// longPaddleExample is paddleExample training 40 steps of a quarter
// second: long enough to be cut short.
func longPaddleExample(g gomega.Gomega, ns string) *musterv1.TrainingJob {
	job := paddleExample(g, ns)
	for i := range job.Spec.Roles {
		ctr := &job.Spec.Roles[i].Template.Spec.Containers[0]
		ctr.Env = slices.DeleteFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "STEPS" })
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: "STEPS", Value: "40"}, corev1.EnvVar{Name: "STEP_SECONDS", Value: "0.25"})
	}
	return job
}

// killParameterServerMidRun waits until the first trainer is training,
// then kills every process of the first parameter server, and returns the
// job's pods' UIDs from just before, by name.
func killParameterServerMidRun(g gomega.Gomega, ns string) map[string]types.UID {
	g.Eventually(func() (string, error) {
		raw, err := cs.CoreV1().Pods(ns).GetLogs("ctr-volcano-trainer-0", &corev1.PodLogOptions{Container: "trainer"}).Do(context.Background()).Raw()
		return string(raw), err
	}, jobTimeout, 500*time.Millisecond).Should(gomega.ContainSubstring("batch: 10 "), "the first attempt is training")
	before := map[string]types.UID{}
	var pods corev1.PodList
	g.Expect(cluster.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{musterv1.LabelJobName: "ctr-volcano"})).To(gomega.Succeed())
	for _, p := range pods.Items {
		before[p.Name] = p.UID
	}
	pids := testutil.PodProcesses(ns, "ctr-volcano-pserver-0")
	g.Expect(pids).NotTo(gomega.BeEmpty())
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return before
}
