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
	// inPlace: one worker process killed in a world of four, until the
	// same four train again: through Muster, its pods restarted in place
	// (torchrun gives up at once); on the floor, torchrun restarting its
	// workers itself (--max-restarts).
	inPlace time.Duration
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
		b.logf("real torch through Muster, restarted in place (run %d of %d)", i+1, b.o.torchRuns)
		if m.inPlace, err = b.torchMusterInPlace(ctx, fmt.Sprintf("bench-torch-in-place-%d", i)); err != nil {
			return err
		}
		b.logf("real torch without the operator, torchrun restarting its workers (run %d of %d)", i+1, b.o.torchRuns)
		if f.inPlace, err = b.torchFloorInPlace(torchFloorPort + b.o.torchRuns + i); err != nil {
			return err
		}
		res.muster, res.floor = append(res.muster, m), append(res.floor, f)
	}
	b.report.torch = res
	return nil
}

func (b *bench) torchMuster(ctx context.Context, ns string) (t torchTimes, err error) {
	ev, stop, err := b.startElastic(ctx, ns, nil)
	defer func() { err = errors.Join(err, stop()) }()
	if err != nil {
		return t, err
	}
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

// startElastic runs examples/pytorch-elastic, its manifest edited by edit
// (nil: as it is), in a namespace of its own, and follows its pods' logs
// into the events it returns. stop deletes the job and its namespace:
// gone with its processes before the floor runs or the next run starts; a
// run that cannot clear its namespace fails rather than leave the next
// beside its processes.
func (b *bench) startElastic(ctx context.Context, ns string, edit func([]byte) []byte) (ev *events, stop func() error, err error) {
	cleanup := []func() error{}
	stop = func() error {
		var errs []error
		for i := len(cleanup) - 1; i >= 0; i-- {
			errs = append(errs, cleanup[i]())
		}
		return errors.Join(errs...)
	}
	if err := b.namespace(ctx, ns); err != nil {
		return nil, stop, err
	}
	cleanup = append(cleanup, func() error {
		if err := b.deleteNamespace(context.WithoutCancel(ctx), ns); err != nil {
			return fmt.Errorf("clearing %s: %w", ns, err)
		}
		return nil
	})
	bins, _, err := b.cfg.BinaryPaths()
	if err != nil {
		return nil, stop, err
	}
	kubectl := func(stdin []byte, args ...string) ([]byte, error) {
		cmd := exec.Command(bins.Kubectl(), append([]string{"--kubeconfig", b.cfg.Kubeconfig()}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		return cmd.CombinedOutput()
	}
	manifest, err := kubectl(nil, "kustomize", filepath.Join(b.cfg.Root, "examples", "pytorch-elastic"))
	if err != nil {
		return nil, stop, fmt.Errorf("kustomize: %w: %s", err, manifest)
	}
	manifest = bytes.Replace(manifest, []byte(`value: "30"`), []byte(`value: "`+epochs+`"`), 1)
	if edit != nil {
		manifest = edit(manifest)
	}
	if out, err := kubectl(manifest, "apply", "--server-side", "-n", ns, "-f", "-"); err != nil {
		return nil, stop, fmt.Errorf("apply: %w: %s", err, out)
	}
	cleanup = append(cleanup, func() error {
		err := b.c.Delete(context.WithoutCancel(ctx), &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: demo.JobName}})
		return client.IgnoreNotFound(err)
	})
	lctx, cancel := context.WithCancel(ctx)
	cleanup = append(cleanup, func() error { cancel(); return nil })
	ev = &events{}
	go func() {
		_ = joblogs.Follow(lctx, b.cs, ns, demo.JobName, joblogs.Options{Follow: true},
			func(l joblogs.Line) { ev.add(l.Pod, l.Text) })
	}()
	return ev, stop, nil
}

// torchMusterInPlace times a gang restart in place with real torch: the
// elastic example restarts in place, its whole gang at once (restartScope
// Job), and torchrun gives up at a worker's first failure
// (maxRestarts 0), so that Muster, not torchrun, restarts the workers.
// One worker process is killed, its agent and pod left alive, as
// torchFloorInPlace kills one.
func (b *bench) torchMusterInPlace(ctx context.Context, ns string) (d time.Duration, err error) {
	inPlace := func(m []byte) []byte {
		for _, r := range [][2]string{
			{"maxRestarts: 10", "maxRestarts: 0"},
			{"restartScope: Task", "restartScope: Job"},
			{"failurePolicy:\n", "failurePolicy:\n    restartMode: InPlace\n"},
		} {
			m = bytes.Replace(m, []byte(r[0]), []byte(r[1]), 1)
		}
		return m
	}
	ev, stop, err := b.startElastic(ctx, ns, inPlace)
	defer func() { err = errors.Join(err, stop()) }()
	if err != nil {
		return 0, err
	}
	first, err := ev.waitEpoch(4, 2, time.Time{}, 5*time.Minute)
	if err != nil {
		return 0, err
	}
	victim := demo.JobName + "-worker-3"
	if first.from == victim {
		victim = demo.JobName + "-worker-2"
	}
	worker, err := workerOf(testutil.PodProcesses(ns, victim))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", victim, err)
	}
	start := time.Now()
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		return 0, err
	}
	return since(ev, 4, start)
}

// workerOf is the worker process torchrun started among pids: a child of
// the one that runs torchrun.
func workerOf(pids []int) (int, error) {
	for _, pid := range pids {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if !bytes.Contains(cmd, []byte("torchrun")) {
			continue
		}
		if kids := testutil.Children(pid); len(kids) > 0 {
			return kids[0], nil
		}
	}
	return 0, fmt.Errorf("no worker process under a torchrun agent among %v", pids)
}

// since is the time from start until training resumed at world (0: any).
func since(ev *events, world int, start time.Time) (time.Duration, error) {
	s, err := ev.waitResumed(world, start, 3*time.Minute)
	return s.at.Sub(start), err
}

// floorRun is the floor's training as bare processes on this machine: a
// store process and torchrun agents with Muster's settings, no Kubernetes
// and no operator.
type floorRun struct {
	dir   string
	env   []string
	ev    *events
	procs []*exec.Cmd
	train string
}

// startFloor starts a floor's store, listening on storePort, and its first
// agents. Each run's store listens on its own port: the last one's may not
// have let go of it yet.
func (b *bench) startFloor(storePort, agents int) (*floorRun, error) {
	dir, err := os.MkdirTemp("", "muster-bench-floor-")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(storePort)
	f := &floorRun{dir: dir, ev: &events{}, train: filepath.Join(b.cfg.Root, "examples", "pytorch-elastic", "train.py")}
	f.env = append(os.Environ(),
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"MUSTER_STORE_PORT="+port, "PYTHONUNBUFFERED=1", "CKPT_DIR="+dir, "EPOCHS="+epochs,
		"PET_NNODES=2:4", "PET_NPROC_PER_NODE=1", "PET_RDZV_BACKEND=c10d", "PET_RDZV_ENDPOINT=127.0.0.1:"+port,
		"PET_RDZV_ID=floor", "PET_RDZV_CONF=last_call_timeout=5,join_timeout=600,is_host=false",
		"PET_MAX_RESTARTS=10", "PET_MONITOR_INTERVAL=1")
	if _, err := f.start("store", "/usr/bin/python3", "-c", objects.StoreScript); err != nil {
		f.stop()
		return nil, err
	}
	for i := range agents {
		if _, err := f.agent(i); err != nil {
			f.stop()
			return nil, err
		}
	}
	return f, nil
}

func (f *floorRun) start(name string, argv ...string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = f.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f.procs = append(f.procs, cmd)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.ev.add(name, sc.Text())
		}
	}()
	return cmd, nil
}

// agent starts torchrun agent i.
func (f *floorRun) agent(i int) (*exec.Cmd, error) {
	return f.start("agent-"+strconv.Itoa(i), "/usr/bin/torchrun", f.train)
}

// stop kills every process of the run and removes its checkpoints.
func (f *floorRun) stop() {
	for _, p := range f.procs {
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		_ = p.Wait()
	}
	_ = os.RemoveAll(f.dir)
}

// torchFloor times a lost worker and both rescales on the floor.
func (b *bench) torchFloor(storePort int) (torchTimes, error) {
	var t torchTimes
	f, err := b.startFloor(storePort, 4)
	if err != nil {
		return t, err
	}
	defer f.stop()
	agents := f.procs[1:]
	if _, err := f.ev.waitEpoch(4, 2, time.Time{}, 5*time.Minute); err != nil {
		return t, err
	}
	// A lost worker: its whole process group dies at once, as a pod would.
	at := time.Now()
	_ = syscall.Kill(-agents[3].Process.Pid, syscall.SIGKILL)
	if t.loss, err = since(f.ev, 0, at); err != nil {
		return t, err
	}
	at = time.Now()
	if _, err := f.agent(4); err != nil {
		return t, err
	}
	if t.scaleUp, err = since(f.ev, 4, at); err != nil {
		return t, err
	}
	// A scale-down: a worker told to stop, as a deleted pod is.
	at = time.Now()
	_ = syscall.Kill(-agents[2].Process.Pid, syscall.SIGTERM)
	if t.scaleDown, err = since(f.ev, 3, at); err != nil {
		return t, err
	}
	return t, nil
}

// torchFloorInPlace times torchrun's own restart of its workers: one
// worker process killed, its agent restarts it and every other agent its
// own (--max-restarts), and the same four train again.
func (b *bench) torchFloorInPlace(storePort int) (time.Duration, error) {
	f, err := b.startFloor(storePort, 4)
	if err != nil {
		return 0, err
	}
	defer f.stop()
	if _, err := f.ev.waitEpoch(4, 2, time.Time{}, 5*time.Minute); err != nil {
		return 0, err
	}
	worker, err := workerOf([]int{f.procs[4].Process.Pid})
	if err != nil {
		return 0, err
	}
	at := time.Now()
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		return 0, err
	}
	return since(f.ev, 4, at)
}
