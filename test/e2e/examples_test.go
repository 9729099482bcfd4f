package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/joblogs"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/demo"
)

// The seed systems' examples whose behaviour is real torch training: each
// is applied as its README tells a user, and what the README promises is
// watched in the training's own progress lines. Each is alone in the
// host lane: its torch keeps the two cores busy.

// exampleRun is one example applied in a namespace of its own, with the
// progress its pods print followed from the start.
type exampleRun struct {
	t   *testing.T
	g   gomega.Gomega
	ns  string
	job string

	mu   sync.Mutex
	prog demo.Progress
	all  strings.Builder
}

// runExample applies examples/<folder> into a new namespace and follows
// the job's pods.
func runExample(t *testing.T, g gomega.Gomega, folder, job string) *exampleRun {
	t.Helper()
	r := &exampleRun{t: t, g: g, ns: cluster.Namespace(t, g), job: job}
	r.kubectl("apply", "--server-side", "-k", filepath.Join(cluster.Root, "examples", folder))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = joblogs.Follow(ctx, cs, r.ns, job, joblogs.Options{Follow: true}, func(l joblogs.Line) {
			r.mu.Lock()
			defer r.mu.Unlock()
			fmt.Fprintf(&r.all, "[%s] %s\n", l.Pod, l.Text)
			if e, ok := demo.ParseEvent(l.Text); ok {
				r.prog.Observe(e)
			}
		})
	}()
	return r
}

func (r *exampleRun) kubectl(args ...string) string {
	r.t.Helper()
	bins, _, err := cluster.BinaryPaths()
	r.g.Expect(err).NotTo(gomega.HaveOccurred())
	args = append([]string{"--kubeconfig", cluster.Kubeconfig(), "-n", r.ns}, args...)
	out, err := exec.Command(bins.Kubectl(), args...).CombinedOutput()
	r.g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}

// muster runs the muster command as a user would.
func (r *exampleRun) muster(args ...string) string {
	r.t.Helper()
	cmd := exec.Command(muster(r.t), append(args, "-n", r.ns)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig())
	out, err := cmd.CombinedOutput()
	r.g.Expect(err).NotTo(gomega.HaveOccurred(), "muster %v: %s", args, out)
	return string(out)
}

func (r *exampleRun) progress() demo.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.prog
	p.Worlds = append([]int(nil), p.Worlds...)
	p.Resumes = append([]int(nil), p.Resumes...)
	return p
}

func (r *exampleRun) lines() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all.String()
}

// trainsAt waits for an epoch finished by a world of size world.
func (r *exampleRun) trainsAt(world int) {
	r.t.Helper()
	r.g.Eventually(func() error {
		if p := r.progress(); p.World() != world || p.EpochsInWorld() < 1 {
			return fmt.Errorf("no epoch at world %d yet: worlds %v, finished %t", world, p.Worlds, p.Finished)
		}
		return nil
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed(), func() string { return "the pods' logs:\n" + r.lines() })
}

// examples/t9k-pytorch: T9k's pause mode is `muster suspend`: the pods and
// the store pod go, the job and its status stay; `muster resume` makes
// them again and the training goes on from the epoch checkpointed on the
// claim.
func TestT9kPyTorchExample(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	r := runExample(t, g, "t9k-pytorch", "pytorch-example")
	r.trainsAt(2)
	before := r.progress()

	r.muster("suspend", "pytorch-example")
	suspended := framework.WaitJob(g, c, r.ns, "pytorch-example", jobTimeout, framework.PhaseIs(musterv1.PhaseSuspended))
	g.Expect(suspended.Status.Restarts.Accountable).To(gomega.BeZero(), "a suspension is not charged")
	for _, pod := range []string{"pytorch-example-worker-0", "pytorch-example-worker-1", "pytorch-example-store"} {
		g.Eventually(framework.PodGone(cs, r.ns, pod), jobTimeout, 500*time.Millisecond).Should(gomega.BeTrue(), "%s is deleted", pod)
	}

	r.muster("resume", "pytorch-example")
	g.Eventually(func() error {
		p := r.progress()
		if len(p.Resumes) <= len(before.Resumes) || p.Resumes[len(p.Resumes)-1] < 1 || p.EpochsInWorld() < 1 {
			return fmt.Errorf("no epoch after a resume from a checkpoint yet: resumes %v, worlds %v", p.Resumes, p.Worlds)
		}
		return nil
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed(), func() string { return "the pods' logs:\n" + r.lines() })
	resumed := framework.WaitJob(g, c, r.ns, "pytorch-example", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	g.Expect(resumed.Status.Restarts.Accountable).To(gomega.BeZero())
	g.Expect(r.progress().Resumes[len(r.progress().Resumes)-1]).To(gomega.BeNumerically(">", before.LastEpoch),
		"resumed from the last checkpoint, not from scratch")
}

// examples/t9k-pytorch-debug: T9k's debug mode is spec.run.debug: the
// pods carry the training's environment and volumes but run `sleep inf`,
// for `kubectl exec`; nothing trains.
func TestT9kPyTorchDebugExample(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	r := runExample(t, g, "t9k-pytorch-debug", "pytorch-example-debug")
	framework.WaitJob(g, c, r.ns, "pytorch-example-debug", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	pod, err := cs.CoreV1().Pods(r.ns).Get(context.Background(), "pytorch-example-debug-worker-0", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(pod.Spec.Containers[0].Command).To(gomega.Equal([]string{"sleep", "inf"}))
	g.Expect(pod.Status.Phase).To(gomega.Equal(corev1.PodRunning))
	// The README's exec: the training's variables are there.
	env := r.kubectl("exec", "pytorch-example-debug-worker-0", "--", "env")
	for _, want := range []string{"PET_NPROC_PER_NODE=1", "PET_RDZV_ENDPOINT=", "MUSTER_JOB_NAME=pytorch-example-debug"} {
		g.Expect(env).To(gomega.ContainSubstring(want))
	}
	g.Expect(r.kubectl("exec", "pytorch-example-debug-worker-0", "--", "ls", "/opt/mnist")).To(gomega.ContainSubstring("main.py"))
	// It never trains and never ends on its own.
	g.Consistently(func() int { return len(r.progress().Worlds) }, 5*time.Second, 500*time.Millisecond).Should(gomega.BeZero())
	g.Expect(r.kubectl("get", "trainingjob", "pytorch-example-debug", "-o", "jsonpath={.status.phase}")).To(gomega.Equal("Running"))
}

// examples/kubedl-elastic: the throughput autoscaler grows the job as
// KubeDL's elastic scaling controller does, and the larger world trains
// on from the checkpoint on the shared volume.
func TestKubeDLElasticExample(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	r := runExample(t, g, "kubedl-elastic", "resnet")
	r.trainsAt(2)
	grown := framework.WaitJob(g, c, r.ns, "resnet", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Spec.Scaling.Replicas).NotTo(gomega.BeNil())
		g.Expect(*j.Spec.Scaling.Replicas).To(gomega.BeNumerically(">=", 3), "autoscaler: %+v", j.Status.Autoscaler)
	})
	g.Expect(grown.Status.Autoscaler).NotTo(gomega.BeNil())
	g.Expect(grown.Status.Autoscaler.Sizes).NotTo(gomega.BeEmpty(), "the throughput measured at each size")
	r.trainsAt(3)
	p := r.progress()
	g.Expect(p.Resumes).NotTo(gomega.BeEmpty())
	g.Expect(p.Resumes[len(p.Resumes)-1]).To(gomega.BeNumerically(">", 0), "the world of 3 resumed from a checkpoint: %v", p.Resumes)
}

// examples/torchelastic-imagenet: "launch new pods ... to join the
// training" is `muster scale imagenet --replicas 3`; a third worker joins
// the world, which goes on from the checkpoint.
func TestTorchelasticImagenetExample(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	r := runExample(t, g, "torchelastic-imagenet", "imagenet")
	r.trainsAt(2)
	r.muster("scale", "imagenet", "--replicas", "3")
	r.trainsAt(3)
	p := r.progress()
	g.Expect(p.Worlds[0]).To(gomega.Equal(2), "worlds %v", p.Worlds)
	g.Expect(p.Resumes).NotTo(gomega.BeEmpty())
	g.Expect(p.Resumes[len(p.Resumes)-1]).To(gomega.BeNumerically(">", 0), "resumes %v", p.Resumes)
}

// examples/generic: no runtime, Muster's variables and {{...}}
// placeholders in a shell command; the job succeeds when all tasks have.
func TestGenericExample(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	r := runExample(t, g, "generic", "generic")
	framework.WaitJob(g, c, r.ns, "generic", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	for i := range 3 {
		name := fmt.Sprintf("generic-worker-%d", i)
		pod, err := cs.CoreV1().Pods(r.ns).Get(context.Background(), name, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(pod.Labels).To(gomega.HaveKeyWithValue("shard", fmt.Sprint(i)), "the placeholder in a label")
		out, err := framework.PodLog(cs, r.ns, name, "main")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(out).To(gomega.Equal(fmt.Sprintf("I am %s, task %d of 3, attempt 1; shard %d; peer 0 is generic-worker-0.generic\n", name, i, i)))
	}
}

// examples/pytorch-static: a static DDP world of a master and two workers
// over gloo; the master decides.
func TestPyTorchStaticExample(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	r := runExample(t, g, "pytorch-static", "ddp")
	got := framework.WaitJob(g, c, r.ns, "ddp", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Completion.Role).To(gomega.Equal("master"), "completion %+v", got.Status.Completion)
	g.Eventually(r.lines, time.Minute, 500*time.Millisecond).Should(gomega.And(
		gomega.ContainSubstring("epoch=19 world=3 loss="), gomega.MatchRegexp(`done: w=[0-9.]+ b=[0-9.]+`)))
}
