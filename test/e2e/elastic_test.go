package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/joblogs"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/demo"
)

// eventLog collects the example's progress events with the pod each came
// from.
type eventLog struct {
	mu     sync.Mutex
	events []demo.Event
	pods   []string
}

func (l *eventLog) add(line joblogs.Line) {
	if e, ok := demo.ParseEvent(line.Text); ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, e)
		l.pods = append(l.pods, line.Pod)
	}
}

// lastEpoch is the newest epoch event and the pod that printed it (rank 0).
func (l *eventLog) lastEpoch() (demo.Event, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.events) - 1; i >= 0; i-- {
		if l.events[i].Name == "epoch" {
			return l.events[i], l.pods[i], true
		}
	}
	return demo.Event{}, "", false
}

// Killing every process of the pod that hosts rank 0 does not end the job:
// the agents meet at the job's store pod, the others re-form the world, the
// lost worker is replaced and rejoins, and training goes on from its
// checkpoint to success. Meanwhile rank 0's progress reports (the
// example's muster_progress) reach status.progress, read from whichever
// pod hosts rank 0, up to 100% once it has finished.
func TestLosingRankZeroDoesNotEndTheJob(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	bins, _, err := cluster.BinaryPaths()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// The example as shipped, trained for 60 epochs rather than 30: rank 0
	// is lost only once a read of its reports has landed (every 30 s),
	// and the world it leaves must still have epochs to train.
	rendered, err := exec.Command(bins.Kubectl(), "kustomize", filepath.Join(cluster.Root, "examples", "pytorch-elastic")).Output()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	epochs := regexp.MustCompile(`(name: EPOCHS\s+value: )"30"`)
	g.Expect(epochs.Match(rendered)).To(gomega.BeTrue(), "the example sets EPOCHS to 30:\n%s", rendered)
	apply := exec.Command(bins.Kubectl(), "--kubeconfig", cluster.Kubeconfig(), "apply", "--server-side", "-n", ns, "-f", "-")
	apply.Stdin = bytes.NewReader(epochs.ReplaceAll(rendered, []byte(`${1}"60"`)))
	out, err := apply.CombinedOutput()
	g.Expect(err).NotTo(gomega.HaveOccurred(), string(out))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &eventLog{}
	go func() { _ = joblogs.Follow(ctx, cs, ns, demo.JobName, joblogs.Options{Follow: true}, log.add) }()

	progress := &progressSeen{}
	go progress.follow(ctx, ns, demo.JobName)

	// Rank 0 is lost once its reports have reached status.progress: the
	// operator reads every 30 s, so a job killed sooner might have no read
	// land between the loss, the new world's forming and the end.
	var before demo.Event
	var rank0 string
	g.Eventually(func() error {
		e, pod, ok := log.lastEpoch()
		if !ok || e.Epoch < 2 {
			return fmt.Errorf("no epoch 2 yet")
		}
		if percents, _ := progress.seen(); len(percents) == 0 {
			return fmt.Errorf("epoch %d, and no report of rank 0 in status.progress yet", e.Epoch)
		}
		before, rank0 = e, pod
		return nil
	}, jobTimeout, time.Second).Should(gomega.Succeed(), "rank 0's reports reach status.progress while it trains")
	pids := testutil.PodProcesses(ns, rank0)
	g.Expect(pids).NotTo(gomega.BeEmpty(), "processes of %s", rank0)
	t.Logf("killing %s (rank 0, epoch %d): pids %v", rank0, before.Epoch, pids)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}

	g.Eventually(func() error {
		e, _, _ := log.lastEpoch()
		if e.Epoch <= before.Epoch+1 {
			return fmt.Errorf("training has not gone on yet: epoch %d", e.Epoch)
		}
		return nil
	}, jobTimeout, time.Second).Should(gomega.Succeed(), "training goes on after rank 0's pod is lost")

	got := framework.WaitJob(g, c, ns, demo.JobName, jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Restarts.Total).To(gomega.BeNumerically(">=", 1), "the lost worker was replaced")
	g.Expect(got.Status.Elastic.StoreRestarts).To(gomega.BeZero())
	percents, reporters := progress.seen()
	t.Logf("status.progress: percents %v, reporters %v, final %+v", percents, reporters, got.Status.Progress)
	// Rank 0's last report, left as its termination message: 100%.
	framework.WaitJob(g, c, ns, demo.JobName, time.Minute, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Progress).NotTo(gomega.BeNil())
		g.Expect(j.Status.Progress.Percent).To(gomega.HaveValue(gomega.Equal(int32(100))))
	})
	g.Expect(reporters).To(gomega.HaveEach(gomega.HavePrefix(demo.JobName+"-worker-")), "the reports came from the job's workers")
}

// progressSeen records the job's status.progress as the operator writes
// it: each percent read and the pods that served them.
type progressSeen struct {
	mu        sync.Mutex
	percents  []int32
	reporters []string
}

func (p *progressSeen) follow(ctx context.Context, ns, name string) {
	for ctx.Err() == nil {
		job := &musterv1.TrainingJob{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err == nil && job.Status.Progress != nil && job.Status.Progress.Percent != nil {
			pr := job.Status.Progress
			p.mu.Lock()
			if n := len(p.percents); n == 0 || p.percents[n-1] != *pr.Percent || p.reporters[n-1] != pr.Reporter {
				p.percents, p.reporters = append(p.percents, *pr.Percent), append(p.reporters, pr.Reporter)
			}
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (p *progressSeen) seen() ([]int32, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.percents), slices.Clone(p.reporters)
}
