package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/demo"
)

const jobTimeout = 3 * time.Minute

// python makes the last role run a python3 script on the host's python.
func python(script string, args ...string) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) {
		p.Spec.TerminationGracePeriodSeconds = new(int64(5))
		p.Spec.Containers[0].Image = image
		p.Spec.Containers[0].Command = append([]string{"/usr/bin/python3", "-c", script}, args...)
	}
}

// TestElasticDemo is `make demo`'s scenario: real torchrun workers scaled
// 4 -> 2 -> 3, each new world resuming from the last checkpoint, until the
// job succeeds.
func TestElasticDemo(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	phases := watchPhases(t, g, ns, demo.JobName)
	rep := runDemoIn(t, g, ns, nil)
	// The removed pods may stop a moment apart, so torch can form a passing
	// world in between (4 -> 3 -> 2): what matters is the order 4, 2, 3.
	worlds := rep.Progress.Worlds
	g.Expect(worlds[0]).To(gomega.Equal(4), "worlds %v", worlds)
	g.Expect(worlds[len(worlds)-1]).To(gomega.Equal(3), "worlds %v", worlds)
	g.Expect(worlds[1:len(worlds)-1]).To(gomega.ContainElement(2), "worlds %v", worlds)
	resumes := rep.Progress.Resumes
	g.Expect(len(resumes)).To(gomega.BeNumerically(">=", 2), "each new world resumed: %v", resumes)
	for i, r := range resumes {
		g.Expect(r).To(gomega.BeNumerically(">", 0), "resumes %v", resumes)
		if i > 0 {
			g.Expect(r).To(gomega.BeNumerically(">=", resumes[i-1]), "from ever later checkpoints: %v", resumes)
		}
	}
	g.Expect(rep.Progress.Finished).To(gomega.BeTrue())
	g.Expect(rep.Phase).To(gomega.Equal(musterv1.PhaseSucceeded))
	g.Expect(rep.Completion).To(gomega.Equal("SucceededTaskCount 1 has reached MinSucceededTaskCount 1 in role worker"))
	// The operator read rank 0's reports into status.progress, which the
	// demo showed as it rose, and the last report ends it at 100%.
	g.Eventually(func(g gomega.Gomega) {
		job := &musterv1.TrainingJob{}
		g.Expect(cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: demo.JobName}, job)).To(gomega.Succeed())
		g.Expect(job.Status.Progress).NotTo(gomega.BeNil())
		g.Expect(job.Status.Progress.Percent).To(gomega.HaveValue(gomega.Equal(int32(100))))
	}, time.Minute, 500*time.Millisecond).Should(gomega.Succeed())

	// A job that grows or shrinks while it trains stays Running throughout;
	// it ends with a status as clean as an unscaled run's, and nothing
	// along the way was worth a warning.
	seen := phases(musterv1.PhaseSucceeded)
	if len(seen) > 0 && seen[0] == musterv1.PhasePending {
		seen = seen[1:] // before the first pod runs
	}
	g.Expect(seen).To(gomega.Equal([]musterv1.JobPhase{musterv1.PhaseRunning, musterv1.PhaseSucceeded}), "phases %v", seen)
	job := &musterv1.TrainingJob{}
	g.Expect(cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: demo.JobName}, job)).To(gomega.Succeed())
	expectCleanFinish(g, job)
	expectNoWarnings(g, ns)
}

// hostPID finds the host process of a pod's container by a marker in its
// command line.
func hostPID(g gomega.Gomega, marker string) int {
	var pid int
	g.Eventually(func() error {
		out, err := exec.Command("pgrep", "-f", marker).Output()
		if err != nil {
			return fmt.Errorf("no process with %q yet", marker)
		}
		pid, err = strconv.Atoi(strings.Fields(string(out))[0])
		return err
	}, 30*time.Second, 200*time.Millisecond).Should(gomega.Succeed())
	return pid
}

// A worker killed with SIGKILL is replaced (exit 137 is retryable under
// ExitCode) and the job keeps running. Re-created: inplace_test.go has
// the restarts in place.
func TestSIGKILLedWorkerIsRecovered(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	marker := "muster-e2e-kill-" + ns
	job := testutil.MakeJob("kill", ns).Role("worker", 2).
		Template(python("import time; time.sleep(600)", marker+"-{{MUSTER_TASK_INDEX}}")).Obj()
	job.Spec.FailurePolicy.RestartMode = musterv1.RestartModeRecreate
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "kill", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	podKey := client.ObjectKey{Namespace: ns, Name: "kill-worker-1"}
	var old corev1.Pod
	g.Expect(c.Get(context.Background(), podKey, &old)).To(gomega.Succeed())

	g.Expect(syscall.Kill(hostPID(g, marker+"-1"), syscall.SIGKILL)).To(gomega.Succeed())
	got := framework.WaitJob(g, c, ns, "kill", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		var pod corev1.Pod
		g.Expect(c.Get(context.Background(), podKey, &pod)).To(gomega.Succeed())
		g.Expect(pod.UID).NotTo(gomega.Equal(old.UID), "the pod is replaced")
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
	})
	task, ok := got.Status.Roles[0].Task(1)
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(task.LastExit).NotTo(gomega.BeNil())
	g.Expect(task.LastExit.Code).To(gomega.Equal(int32(137)))
	g.Expect(task.Restarts).To(gomega.Equal(int32(1)))
	g.Expect(got.Status.Restarts.Accountable).To(gomega.Equal(int32(1)))
}

// A master exiting 1 fails a PyTorch job at once, and the trigger says so.
func TestFailingMasterFailsTheJob(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	job := testutil.MakeJob("mf", ns).PyTorch().
		Role("master", 1).Template(python("import sys, time; time.sleep(2); sys.exit(1)")).
		Role("worker", 2).Template(python("import time; time.sleep(600)")).Obj()
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	got := framework.WaitJob(g, c, ns, "mf", jobTimeout, framework.PhaseIs(musterv1.PhaseFailed))
	comp := got.Status.Completion
	g.Expect(comp.Reason).To(gomega.Equal(musterv1.ReasonPermanentExitCode))
	g.Expect(comp.Role).To(gomega.Equal("master"))
	g.Expect(*comp.Index).To(gomega.Equal(int32(0)))
	g.Expect(*comp.ExitCode).To(gomega.Equal(int32(1)))
	g.Expect(comp.Message).To(gomega.ContainSubstring("mf-master-0"))
	g.Eventually(framework.PodGone(cs, ns, "mf-worker-0"), 60*time.Second, 500*time.Millisecond).Should(gomega.BeTrue(), "running workers are stopped")
}

// Debug mode runs `sleep inf` instead of the command, so the pod stays up
// for a user to exec into.
func TestDebugModePodsSleep(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	job := testutil.MakeJob("dbg", ns).Role("worker", 1).Template(python("import sys; sys.exit(3)")).
		Debug(musterv1.DebugPolicy{}).Obj()
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "dbg", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	g.Consistently(func() corev1.PodPhase { return framework.GetPod(g, cs, ns, "dbg-worker-0").Status.Phase }, 3*time.Second, 500*time.Millisecond).
		Should(gomega.Equal(corev1.PodRunning))
	g.Expect(framework.GetPod(g, cs, ns, "dbg-worker-0").Spec.Containers[0].Command).To(gomega.Equal([]string{"sleep", "inf"}))
}

const counter = `
import os, time
path = "/ckpt/step"
start = int(open(path).read()) if os.path.exists(path) else 0
print(f"resumed at {start}" if start else "started", flush=True)
for i in range(start, 16):
    time.sleep(0.5)
    with open(path + ".tmp", "w") as f:
        f.write(str(i + 1))
    os.replace(path + ".tmp", path)
    print(f"step {i + 1}", flush=True)
`

// Suspending deletes the pods and keeps the job; resuming recreates them,
// and the program continues from its checkpoint on the shared volume.
func TestSuspendThenResumeContinuesFromCheckpoint(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "ckpt", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	g.Expect(c.Create(ctx, pvc)).To(gomega.Succeed())
	job := testutil.MakeJob("pause", ns).Role("worker", 1).Template(func(p *corev1.PodTemplateSpec) {
		python(counter)(p)
		p.Spec.Volumes = []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ckpt", MountPath: "/ckpt"}}
	}).Obj()
	g.Expect(c.Create(ctx, job)).To(gomega.Succeed())
	g.Eventually(func() string { out, _ := framework.PodLog(cs, ns, "pause-worker-0", "main"); return out }, jobTimeout, 500*time.Millisecond).
		Should(gomega.ContainSubstring("step 3"))

	setSuspend := func(s bool) {
		execution := musterv1.ExecutionStart
		if s {
			execution = musterv1.ExecutionSuspend
		}
		patch := fmt.Appendf(nil, `{"spec":{"run":{"execution":%q}}}`, execution)
		g.Expect(c.Patch(ctx, &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pause"}},
			client.RawPatch("application/merge-patch+json", patch))).To(gomega.Succeed())
	}
	setSuspend(true)
	framework.WaitJob(g, c, ns, "pause", jobTimeout, framework.PhaseIs(musterv1.PhaseSuspended))
	g.Eventually(framework.PodGone(cs, ns, "pause-worker-0"), 60*time.Second, 500*time.Millisecond).Should(gomega.BeTrue())

	setSuspend(false)
	got := framework.WaitJob(g, c, ns, "pause", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	out, err := framework.PodLog(cs, ns, "pause-worker-0", "main")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var resumed int
	_, err = fmt.Sscanf(out[strings.Index(out, "resumed at "):], "resumed at %d", &resumed)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "log: %s", out)
	g.Expect(resumed).To(gomega.BeNumerically(">=", 3))
	g.Expect(out).To(gomega.ContainSubstring("step 16"))
	g.Expect(got.Status.Restarts.Total).To(gomega.BeZero(), "a suspension is not a restart")
}

// testWriter sends the demo's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// Scaling back up to maxReplicas: the world re-forms at once when it reaches
// its maximum, without waiting out the last call.
func TestScaleUpToMax(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	rep := runDemo(t, g, []int{4, 2, 4})
	worlds := rep.Progress.Worlds
	g.Expect(worlds[len(worlds)-1]).To(gomega.Equal(4), "worlds %v", worlds)
	g.Expect(worlds).To(gomega.ContainElement(2))
	g.Expect(rep.Phase).To(gomega.Equal(musterv1.PhaseSucceeded))
}

// runDemo runs the demo scenario through the given world sizes (nil: the
// demo's own) in a namespace of its own.
func runDemo(t *testing.T, g gomega.Gomega, worlds []int) *demo.Report {
	return runDemoIn(t, g, cluster.Namespace(t, g), worlds)
}

// runDemoIn runs the demo scenario in the namespace ns.
func runDemoIn(t *testing.T, g gomega.Gomega, ns string, worlds []int) *demo.Report {
	cfg, err := cluster.RESTConfig()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	bins, _, err := cluster.BinaryPaths()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	rep, err := demo.Run(context.Background(), cfg, demo.Options{
		Out: testWriter{t}, Namespace: ns, Kubectl: bins.Kubectl(), Kubeconfig: cluster.Kubeconfig(),
		Example: filepath.Join(cluster.Root, "examples", "pytorch-elastic"), Worlds: worlds,
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return rep
}

// A task whose pod cannot start says why in the job's status: here its
// image cannot be pulled (a reference the node refuses, as it refuses a
// private image it has no credentials for).
func TestATaskSaysWhyItsPodCannotStart(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	job := testutil.MakeJob("nopull", ns).Role("worker", 1).Template(python("print('never')")).Obj()
	job.Spec.Roles[0].Template.Spec.Containers[0].Image = "127.0.0.1/Not-A-Valid-Reference:1"
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	container := job.Spec.Roles[0].Template.Spec.Containers[0].Name
	got := framework.WaitJob(g, c, ns, "nopull", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Roles).NotTo(gomega.BeEmpty())
		g.Expect(j.Status.Roles[0].Tasks).NotTo(gomega.BeEmpty())
		g.Expect(j.Status.Roles[0].Tasks[0].Waiting).To(gomega.Equal(container + ": ImagePullBackOff"))
	})
	g.Expect(got.Status.Phase).To(gomega.Equal(musterv1.PhasePending))
	g.Expect(got.Status.Roles[0].Tasks[0].State).To(gomega.Equal(musterv1.TaskPending))
}
