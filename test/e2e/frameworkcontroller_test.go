package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/joblogs"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/demo"
)

// FrameworkController's PyTorch elastic example (seed 000), as
// examples/frameworkcontroller-pet writes it: 4 torchrun workers at the
// job's rendezvous store, rescaled 4 -> 2 -> 3 by patching the size and
// minSucceeded together (the original patches taskNumber and
// minSucceededTaskCount), every new world resuming from the newest
// checkpoint of any worker. The job succeeds once the 3 workers left have,
// with FrameworkController's trigger message, and the store goes with it.
func TestFrameworkControllerPetExample(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	bins, _, err := cluster.BinaryPaths()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	kubectl := func(args ...string) {
		args = append([]string{"--kubeconfig", cluster.Kubeconfig(), "-n", ns}, args...)
		out, err := exec.Command(bins.Kubectl(), args...).CombinedOutput()
		g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl %v: %s", args, out)
	}
	kubectl("apply", "--server-side", "-k", filepath.Join(cluster.Root, "examples", "frameworkcontroller-pet"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var prog demo.Progress
	go func() {
		_ = joblogs.Follow(ctx, cs, ns, "pet", joblogs.Options{Follow: true}, func(l joblogs.Line) {
			if e, ok := demo.ParseEvent(l.Text); ok {
				mu.Lock()
				defer mu.Unlock()
				prog.Observe(e)
			}
		})
	}()
	progress := func() demo.Progress {
		mu.Lock()
		defer mu.Unlock()
		p := prog
		p.Worlds = append([]int(nil), p.Worlds...)
		p.Resumes = append([]int(nil), p.Resumes...)
		p.EpochsAt = append([]int(nil), p.EpochsAt...)
		return p
	}
	trainsAt := func(world int) {
		g.Eventually(func() error {
			if p := progress(); p.World() != world || p.EpochsInWorld() < 1 {
				return fmt.Errorf("no epoch at world %d yet: worlds %v, finished %t", world, p.Worlds, p.Finished)
			}
			return nil
		}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	}
	// The README's patch: the size and the completion rule in one update,
	// as FrameworkController's taskNumber and minSucceededTaskCount.
	rescale := func(n int) {
		kubectl("patch", "trainingjob", "pet", "--type", "json", "-p", fmt.Sprintf(`[
			{"op": "test", "path": "/spec/roles/0/name", "value": "worker"},
			{"op": "replace", "path": "/spec/scaling/replicas", "value": %d},
			{"op": "replace", "path": "/spec/roles/0/completion/minSucceeded", "value": %d}]`, n, n))
	}

	trainsAt(4)
	rescale(2)
	trainsAt(2)
	rescale(3)
	got := framework.WaitJob(g, c, ns, "pet", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))

	comp := got.Status.Completion
	g.Expect(comp).NotTo(gomega.BeNil())
	g.Expect(comp.Reason).To(gomega.Equal(musterv1.ReasonCompletionPolicy), "completion: %+v", comp)
	g.Expect(comp.Message).To(gomega.HavePrefix("SucceededTaskCount 3 has reached MinSucceededTaskCount 3"), "completion: %+v", comp)
	g.Expect(comp.Role).To(gomega.Equal("worker"))
	succeeded := int32(0)
	for _, task := range got.Status.Roles[0].Tasks {
		if !task.DeletionPending && task.State == musterv1.TaskSucceeded {
			succeeded += max(task.Count, 1)
		}
	}
	g.Expect(succeeded).To(gomega.Equal(int32(3)), "tasks: %+v", got.Status.Roles[0].Tasks)

	// The removed pods may stop a moment apart, so torch can form a passing
	// world in between (4 -> 3 -> 2): what matters is the order 4, 2, 3,
	// and that every new world went on from a checkpoint.
	p := progress()
	g.Expect(p.Finished).To(gomega.BeTrue(), "rank 0 printed event=finished")
	worlds := p.Worlds
	g.Expect(worlds).NotTo(gomega.BeEmpty())
	g.Expect(worlds[0]).To(gomega.Equal(4), "worlds %v", worlds)
	g.Expect(worlds[len(worlds)-1]).To(gomega.Equal(3), "worlds %v", worlds)
	g.Expect(worlds[1:len(worlds)-1]).To(gomega.ContainElement(2), "worlds %v", worlds)
	g.Expect(len(p.Resumes)).To(gomega.BeNumerically(">=", 2), "each new world resumed: %v", p.Resumes)
	for i, r := range p.Resumes {
		g.Expect(r).To(gomega.BeNumerically(">", 0), "resumes %v", p.Resumes)
		if i > 0 {
			g.Expect(r).To(gomega.BeNumerically(">=", p.Resumes[i-1]), "from ever later checkpoints: %v", p.Resumes)
		}
	}
	// The original's dedicated etcd is cleaned up with the attempt; the
	// job's store pod goes when the job ends.
	g.Eventually(framework.PodGone(cs, ns, "pet-store"), 60*time.Second, 500*time.Millisecond).Should(gomega.BeTrue())
}
