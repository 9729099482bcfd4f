package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/tools/devcluster"
)

var (
	baselineOnce sync.Once
	baselineWant map[string]outcome
)

// undisturbed is how every scenario ends with nothing crashing: run once
// per test binary, by the first test that needs it, in a namespace of its
// own with an operator of its own that is stopped before the test's starts.
func undisturbed(t *testing.T) map[string]outcome {
	t.Helper()
	baselineOnce.Do(func() {
		ns := namespace(t, "chaos-base")
		m := startMonitor(t, ns)
		op := startOperator(t, "")
		baselineWant = runRound(t, &driver{ctx: context.Background(), ns: ns}, m, "base")
		op.stop()
		m.check(t)
		for _, c := range op.crashed() {
			t.Error("operator crashed in the undisturbed run:", c)
		}
	})
	if baselineWant == nil || len(baselineWant) != len(scenarios) {
		t.Fatal("the undisturbed run did not complete")
	}
	return baselineWant
}

// restartComponents kills the named components of the cluster, as a crash
// would, and starts them again, while the jobs go on.
func restartComponents(names ...string) error {
	for _, n := range names {
		if err := devcluster.Kill(cluster.Config, n); err != nil {
			return err
		}
	}
	return devcluster.Up(context.Background(), cluster.Config)
}

// TestControlPlaneRestarts kills etcd and kube-apiserver together, then
// kube-apiserver alone, at seeded random points of a round of every
// scenario; the operator
// keeps running through it and every job must end as undisturbed.
//
// kube-scheduler and kube-controller-manager are restarted with each of
// them. A restarted API server refuses requests (403) until its
// authorizer's caches sync, and a client whose watches were refused twice
// within seconds backs off for minutes: the scheduler left a new pod
// unplaced past the step timeout, and the controller-manager left the next
// test's namespace without its kube-root-ca.crt ConfigMap, which pods
// mount, for most of a minute. A real cluster's components reach another
// API server replica meanwhile. The operator is what this test is about,
// and it is never restarted.
func TestControlPlaneRestarts(t *testing.T) {
	ns := namespace(t, "chaos-cp")
	want := undisturbed(t)
	m := startMonitor(t, ns)
	op := startOperator(t, "")
	d := &driver{ctx: context.Background(), ns: ns}

	// When each restart comes is drawn from the seed, over a round's life
	// (about 30 s undisturbed): a job may be starting, restarting,
	// rescaling or completing.
	rnd := rand.New(rand.NewPCG(seed, 4))
	first, second := time.Duration(1000+rnd.IntN(14000))*time.Millisecond, time.Duration(2000+rnd.IntN(12000))*time.Millisecond
	t.Logf("restarting etcd and kube-apiserver %s in, and kube-apiserver alone %s after (seed %d)", first, second, seed)
	disrupted := make(chan error, 1)
	go func() {
		time.Sleep(first)
		if err := restartComponents("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"); err != nil {
			disrupted <- fmt.Errorf("restarting etcd and kube-apiserver: %w", err)
			return
		}
		time.Sleep(second)
		if err := restartComponents("kube-apiserver", "kube-scheduler", "kube-controller-manager"); err != nil {
			disrupted <- fmt.Errorf("restarting kube-apiserver: %w", err)
			return
		}
		disrupted <- nil
	}()
	got := runRound(t, d, m, "cp")
	if err := <-disrupted; err != nil {
		t.Fatal(err)
	}
	// The monitor's own watch is cut with the API server's and comes back
	// after its client's back-off: a pod made and removed meanwhile (a
	// task that failed and was replaced) is never seen. So the pods it
	// counts may fall short of the undisturbed run's, never exceed them.
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			continue
		}
		if g.Pods > w.Pods {
			t.Errorf("%s: %d pods made, more than the undisturbed run's %d", name, g.Pods, w.Pods)
		}
		g.Pods = w.Pods
		got[name] = g
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the jobs ended differently from the undisturbed run (-want +got):\n%s", diff)
	}
	m.check(t)
	for _, c := range op.crashed() {
		t.Error("operator crashed:", c)
	}
}

// TestProcessNodeRestart kills the process node under a running job: its
// pods die with it and are reported lost when it comes back. Each task is
// replaced exactly once, never while its old pod still counts as live,
// the loss is not charged to the job's restart budget, and the job then
// completes.
func TestProcessNodeRestart(t *testing.T) {
	ns := namespace(t, "chaos-node")
	m := startMonitor(t, ns)
	op := startOperator(t, "")
	d := &driver{ctx: context.Background(), ns: ns}

	const name = "on-node"
	job := testutil.MakeJob(name, ns).Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(5).
		Template(func(t *corev1.PodTemplateSpec) {
			t.Spec.NodeSelector = map[string]string{corev1.LabelHostname: devcluster.ProcNodeName}
			// Ends with 0 on SIGTERM, so the test can finish it.
			t.Spec.Containers[0].Command = []string{"/bin/sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`}
		}).Obj()
	if err := d.retry(func(ctx context.Context) error { return k8s.Create(ctx, job.DeepCopy()) }); err != nil {
		t.Fatal(err)
	}
	before, err := d.waitRunning(name, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := restartComponents("procnode"); err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, p := range before {
		old[string(p.UID)] = true
	}
	after, err := d.waitRunning(name, 2, func(p corev1.Pod) bool { return !old[string(p.UID)] })
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.waitJob(name, "both losses recorded and Running", func(j *musterv1.TrainingJob) bool {
		return outcomeOf(j).TaskRestarts == 2 && j.Status.Phase == musterv1.PhaseRunning
	})
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(got); o.Restarts != 2 || o.AccountableRestarts != 0 || o.Attempt != 0 {
		t.Errorf("want each task replaced once in the same attempt, not charged; got %+v", o)
	}
	for _, p := range after {
		if err := terminateTrapped(d.ctx, ns, p.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.waitPhase(name, musterv1.PhaseSucceeded); err != nil {
		t.Fatal(err)
	}
	m.check(t)
	for _, c := range op.crashed() {
		t.Error("operator crashed:", c)
	}
}

// terminateTrapped sends SIGTERM to a pod's processes once its shell has
// set the trap that makes it exit 0. The pod is Running as soon as the
// shell starts, before the trap is set; a signal that came between would
// end the shell with 143, a failure, and its replacement would run on. The
// shell starts sleep only after the trap is set, so a sleep among the
// pod's processes shows the signal is safe.
func terminateTrapped(ctx context.Context, ns, pod string) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		pids := testutil.PodProcesses(ns, pod)
		if !slices.ContainsFunc(pids, isSleep) {
			return false, nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("pod %s: its shell never started sleep: %w", pod, err)
	}
	return nil
}

// isSleep is whether a process runs sleep, from its command line.
func isSleep(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	arg0, _, _ := strings.Cut(string(raw), "\x00")
	return filepath.Base(arg0) == "sleep"
}
