package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
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
	before := startInPlace(g, job, 3)

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
		g.Expect(pod.UID).To(gomega.Equal(was.UID), "%s must not be re-created", name)
		g.Expect(pod.Status.PodIP).To(gomega.Equal(was.Status.PodIP), "%s keeps its address", name)
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
	before := startInPlace(g, job, 3)
	g.Expect(c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "del-worker-0"}})).To(gomega.Succeed())

	framework.WaitJob(g, c, ns, "del", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Attempt).To(gomega.Equal(int32(1)))
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
	})
	for name, was := range before {
		var pod corev1.Pod
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod)).To(gomega.Succeed())
		if name == "del-worker-0" {
			g.Expect(pod.UID).NotTo(gomega.Equal(was.UID), "the deleted pod is re-created")
			continue
		}
		g.Expect(pod.UID).To(gomega.Equal(was.UID), "%s restarts in place", name)
		g.Expect(pod.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, "1"))
	}
}

// startInPlace creates job, made to restart in place, waits until it runs
// and its pods, all of them, have their addresses, and returns them by
// name: what a test compares each pod with after the restart.
func startInPlace(g *gomega.WithT, job *musterv1.TrainingJob, pods int) map[string]corev1.Pod {
	c := cluster.Client
	job.Spec.FailurePolicy.RestartMode = musterv1.RestartModeInPlace
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	framework.WaitJob(g, c, job.Namespace, job.Name, jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	byName := map[string]corev1.Pod{}
	g.Eventually(func(g gomega.Gomega) {
		var list corev1.PodList
		g.Expect(c.List(context.Background(), &list, client.InNamespace(job.Namespace),
			client.MatchingLabels{musterv1.LabelJobName: job.Name})).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(pods))
		clear(byName)
		for _, p := range list.Items {
			g.Expect(p.Status.PodIP).NotTo(gomega.BeEmpty(), "%s has no address yet", p.Name)
			byName[p.Name] = p
		}
	}, time.Minute, 500*time.Millisecond).Should(gomega.Succeed())
	return byName
}

// ddpResume trains a small DDP model over gloo, one epoch at a time, and
// keeps a checkpoint in the pod's emptyDir (/ckpt), which an in-place
// restart keeps: a new attempt resumes from it.
const ddpResume = `
import os, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
x = torch.randn(64, 1); y = 3 * x + 1
model = DDP(torch.nn.Linear(1, 1)); opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = 0
if os.path.exists("/ckpt/state.pt"):
    s = torch.load("/ckpt/state.pt")
    model.module.load_state_dict(s["model"]); opt.load_state_dict(s["opt"]); start = s["epoch"] + 1
    if rank == 0:
        print(f"resumed epoch={start} attempt={os.environ['MUSTER_ATTEMPT_ID']}", flush=True)
for epoch in range(start, 30):
    opt.zero_grad(); loss = torch.nn.functional.mse_loss(model(x), y); loss.backward(); opt.step()
    torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, "/ckpt/state.pt.tmp")
    os.replace("/ckpt/state.pt.tmp", "/ckpt/state.pt")
    if rank == 0:
        print(f"epoch={epoch} world={world} loss={loss.item():.4f}", flush=True)
    time.sleep(0.5)
dist.destroy_process_group()
`

// A static PyTorch job of four processes restarts in place when a worker
// is killed: every pod keeps its UID and IP, the world forms again in the
// next attempt, resumes from the checkpoint its pods kept, and succeeds.
func TestAStaticPyTorchGangRestartsInPlaceAndResumes(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	marker := "muster-e2e-ddp-" + ns
	cluster.DumpOnFailure(t, framework.Dump{Namespace: ns, PodStatuses: true, OperatorLog: true})
	withCheckpoint := func(p *corev1.PodTemplateSpec) {
		python(ddpResume, marker+"-{{MUSTER_ROLE_NAME}}-{{MUSTER_TASK_INDEX}}")(p)
		p.Spec.Volumes = []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ckpt", MountPath: "/ckpt"}}
	}
	// OnFailure: a killed worker's peers fail too (gloo loses a
	// connection, exit 1), and whichever failure the operator reads first
	// restarts the gang.
	job := testutil.MakeJob("ddp", ns).PyTorch().
		Role("master", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeJob).Template(withCheckpoint).
		Role("worker", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeJob).Template(withCheckpoint).BackoffLimit(3).Obj()
	before := startInPlace(g, job, 4)
	masterLog := func() string { out, _ := framework.PodLog(cs, ns, "ddp-master-0", "main"); return out }
	g.Eventually(masterLog, jobTimeout, 500*time.Millisecond).Should(gomega.ContainSubstring("epoch=5 world=4"))
	g.Expect(syscall.Kill(hostPID(g, marker+"-worker-1"), syscall.SIGKILL)).To(gomega.Succeed())

	got := framework.WaitJob(g, c, ns, "ddp", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Attempt).To(gomega.BeNumerically(">=", 1))
	for name, was := range before {
		var p corev1.Pod
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p)).To(gomega.Succeed())
		g.Expect(p.UID).To(gomega.Equal(was.UID), "%s must not be re-created", name)
	}
	out := masterLog()
	var resumed, attempt int
	i := strings.Index(out, "resumed epoch=")
	g.Expect(i).To(gomega.BeNumerically(">=", 0), "the new attempt resumes from the checkpoint: %s", out)
	_, err := fmt.Sscanf(out[i:], "resumed epoch=%d attempt=%d", &resumed, &attempt)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(resumed).To(gomega.BeNumerically(">=", 6))
	g.Expect(attempt).To(gomega.BeNumerically(">=", 1))
	g.Expect(out).To(gomega.ContainSubstring("epoch=29 world=4"))
}
