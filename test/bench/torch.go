package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/joblogs"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/tools/demo"
)

// torchFloorPort is the floor's store's port in its first run.
const torchFloorPort = 29587

// torchTimes are the times from an event to the first epoch the new world
// finishes.
type torchTimes struct {
	loss, scaleUp, scaleDown time.Duration
}

// stamped is a training event and when it was seen, from which pod or
// agent.
type stamped struct {
	demo.Event
	at   time.Time
	from string
}

// events collects stamped events as they arrive.
type events struct {
	mu  sync.Mutex
	all []stamped
}

func (e *events) add(from, line string) {
	if ev, ok := demo.ParseEvent(line); ok {
		e.mu.Lock()
		e.all = append(e.all, stamped{ev, time.Now(), from})
		e.mu.Unlock()
	}
}

// waitResumed waits for the first epoch finished after a re-rendezvous
// that happened after since, at world (0: any), and returns it.
func (e *events) waitResumed(world int, since time.Time, timeout time.Duration) (stamped, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		resumed := false
		for _, s := range e.all {
			if !s.at.After(since) {
				continue
			}
			if s.Name == "resumed" && (world == 0 || s.World == world) {
				resumed = true
			}
			if resumed && s.Name == "epoch" && (world == 0 || s.World == world) {
				e.mu.Unlock()
				return s, nil
			}
		}
		e.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	return stamped{}, fmt.Errorf("training did not resume (world %d) within %s of %s", world, timeout, since.Format(time.TimeOnly))
}

// waitEpoch waits for an epoch at world after since, and returns it.
func (e *events) waitEpoch(world, minEpoch int, since time.Time, timeout time.Duration) (stamped, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		for _, s := range e.all {
			if s.Name == "epoch" && s.World == world && s.Epoch >= minEpoch && s.at.After(since) {
				e.mu.Unlock()
				return s, nil
			}
		}
		e.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	return stamped{}, fmt.Errorf("no epoch at world %d after %s within %s", world, since.Format(time.TimeOnly), timeout)
}

const epochs = "400" // long enough that training outlives every measurement

// torch measures recovery and rescale with real torchrun workers, through
// Muster on the local cluster and then as bare processes (the floor), in
// turn, -torch-runs times: each time waits on torch's own rendezvous and
// monitor ticks, which move a single run's times by seconds.
func (b *bench) torch(ctx context.Context) error {
	res := &torchResult{}
	for i := range b.o.torchRuns {
		b.logf("real torch through Muster (run %d of %d)", i+1, b.o.torchRuns)
		m, err := b.torchMuster(ctx, fmt.Sprintf("bench-torch-%d", i))
		if err != nil {
			return err
		}
		b.logf("real torch without the operator (run %d of %d)", i+1, b.o.torchRuns)
		f, err := b.torchFloor(torchFloorPort + i)
		if err != nil {
			return err
		}
		res.muster, res.floor = append(res.muster, m), append(res.floor, f)
	}
	b.report.torch = res
	return nil
}

func (b *bench) torchMuster(ctx context.Context, ns string) (t torchTimes, err error) {
	if err := b.namespace(ctx, ns); err != nil {
		return t, err
	}
	// Gone with its processes before the floor runs or the next run starts;
	// a run that cannot clear its namespace fails rather than leave the next
	// beside its processes.
	defer func() {
		if derr := b.deleteNamespace(context.WithoutCancel(ctx), ns); derr != nil {
			err = errors.Join(err, fmt.Errorf("clearing %s: %w", ns, derr))
		}
	}()
	bins, _, err := b.cfg.BinaryPaths()
	if err != nil {
		return t, err
	}
	kubectl := func(stdin []byte, args ...string) ([]byte, error) {
		cmd := exec.Command(bins.Kubectl(), append([]string{"--kubeconfig", b.cfg.Kubeconfig()}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		return cmd.CombinedOutput()
	}
	manifest, err := kubectl(nil, "kustomize", filepath.Join(b.cfg.Root, "examples", "pytorch-elastic"))
	if err != nil {
		return t, fmt.Errorf("kustomize: %w: %s", err, manifest)
	}
	manifest = bytes.Replace(manifest, []byte(`value: "30"`), []byte(`value: "`+epochs+`"`), 1)
	if out, err := kubectl(manifest, "apply", "--server-side", "-n", ns, "-f", "-"); err != nil {
		return t, fmt.Errorf("apply: %w: %s", err, out)
	}
	defer func() {
		_ = b.c.Delete(context.WithoutCancel(ctx), &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: demo.JobName}})
	}()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ev := &events{}
	go func() {
		_ = joblogs.Follow(lctx, b.cs, ns, demo.JobName, joblogs.Options{Follow: true},
			func(l joblogs.Line) { ev.add(l.Pod, l.Text) })
	}()
	first, err := ev.waitEpoch(4, 2, time.Time{}, 5*time.Minute)
	if err != nil {
		return t, err
	}
	victim := demo.JobName + "-worker-3"
	if first.from == victim {
		victim = demo.JobName + "-worker-2"
	}
	pids := testutil.PodProcesses(ns, victim)
	if len(pids) == 0 {
		return t, fmt.Errorf("no processes of %s", victim)
	}
	start := time.Now()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Training resumes at 3, or at 4 if the replacement is back in time.
	if t.loss, err = since(ev, 0, start); err != nil {
		return t, err
	}
	if _, err := ev.waitEpoch(4, 0, start, 3*time.Minute); err != nil {
		return t, err
	}
	for _, step := range []struct {
		world int
		d     *time.Duration
	}{{3, &t.scaleDown}, {4, &t.scaleUp}} {
		start = time.Now()
		job := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: demo.JobName}}
		scale := &autoscalingv1.Scale{ObjectMeta: job.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: int32(step.world)}}
		if err := b.c.SubResource("scale").Update(ctx, job, client.WithSubResourceBody(scale)); err != nil {
			return t, err
		}
		if *step.d, err = since(ev, step.world, start); err != nil {
			return t, err
		}
	}
	return t, nil
}

// since is the time from start until training resumed at world (0: any).
func since(ev *events, world int, start time.Time) (time.Duration, error) {
	s, err := ev.waitResumed(world, start, 3*time.Minute)
	return s.at.Sub(start), err
}

// torchFloor runs the same training as bare processes on this machine: a
// store process and four torchrun agents with Muster's settings, no
// Kubernetes and no operator.
//
// Each run's store listens on its own port: the last one's may not have let
// go of it yet.
func (b *bench) torchFloor(storePort int) (torchTimes, error) {
	var t torchTimes
	dir, err := os.MkdirTemp("", "muster-bench-floor-")
	if err != nil {
		return t, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	port := strconv.Itoa(storePort)
	env := append(os.Environ(),
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"MUSTER_STORE_PORT="+port, "PYTHONUNBUFFERED=1", "CKPT_DIR="+dir, "EPOCHS="+epochs,
		"PET_NNODES=2:4", "PET_NPROC_PER_NODE=1", "PET_RDZV_BACKEND=c10d", "PET_RDZV_ENDPOINT=127.0.0.1:"+port,
		"PET_RDZV_ID=floor", "PET_RDZV_CONF=last_call_timeout=5,join_timeout=600,is_host=false",
		"PET_MAX_RESTARTS=10", "PET_MONITOR_INTERVAL=1")
	ev := &events{}
	var procs []*exec.Cmd
	start := func(name string, argv ...string) (*exec.Cmd, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		procs = append(procs, cmd)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				ev.add(name, sc.Text())
			}
		}()
		return cmd, nil
	}
	defer func() {
		for _, p := range procs {
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			_ = p.Wait()
		}
	}()
	if _, err := start("store", "/usr/bin/python3", "-c", objects.StoreScript); err != nil {
		return t, err
	}
	train := filepath.Join(b.cfg.Root, "examples", "pytorch-elastic", "train.py")
	var agents []*exec.Cmd
	for i := range 4 {
		a, err := start("agent-"+strconv.Itoa(i), "/usr/bin/torchrun", train)
		if err != nil {
			return t, err
		}
		agents = append(agents, a)
	}
	if _, err := ev.waitEpoch(4, 2, time.Time{}, 5*time.Minute); err != nil {
		return t, err
	}
	// A lost worker: its whole process group dies at once, as a pod would.
	at := time.Now()
	_ = syscall.Kill(-agents[3].Process.Pid, syscall.SIGKILL)
	if t.loss, err = since(ev, 0, at); err != nil {
		return t, err
	}
	at = time.Now()
	if _, err := start("agent-4", "/usr/bin/torchrun", train); err != nil {
		return t, err
	}
	if t.scaleUp, err = since(ev, 4, at); err != nil {
		return t, err
	}
	// A scale-down: a worker told to stop, as a deleted pod is.
	at = time.Now()
	_ = syscall.Kill(-agents[2].Process.Pid, syscall.SIGTERM)
	if t.scaleDown, err = since(ev, 3, at); err != nil {
		return t, err
	}
	return t, nil
}
