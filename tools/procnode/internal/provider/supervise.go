package provider

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/proc"
)

// runOnce runs one attempt of c until it exits or stop fires. It returns the
// exit code, whether stop fired, and how long the process ran. A
// configuration or image pull error (waitErr) is retried by the caller
// without counting a restart.
func (r *podRun) runOnce(c *ctr, stop *stopper) (code int32, stopped bool, ranFor time.Duration, waitErr error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// A pull in progress ends with the container.
		select {
		case <-stop.done():
			cancel()
		case <-ctx.Done():
		}
	}()
	a, err := r.startContainer(ctx, c)
	if err != nil {
		var ce configError
		var pe pullError
		if errors.As(err, &ce) || errors.As(err, &pe) {
			return 0, false, 0, err
		}
		// The node itself failed to fork the shim: report it like a runtime would.
		r.mu.Lock()
		c.restartCount = nextRestartCount(c)
		c.everStarted, c.removed = true, false
		if c.state.Terminated != nil {
			c.last = c.state
		}
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}
		r.mu.Unlock()
		r.changed()
		return 128, stop.closed(), 0, nil
	}
	startedAt := a.proc.Started
	r.mu.Lock()
	c.pullBackoff = 0
	c.restartCount = a.index
	if c.everStarted && c.state.Terminated != nil {
		c.last = c.state
	}
	c.everStarted, c.removed = true, false
	c.cur = a
	c.containerID = fmt.Sprintf("procnode://%d", a.proc.Pid)
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}}
	// Without probes a running container counts as started and ready;
	// with them, probeLoop decides. A regular init container is ready only
	// once it has completed, as the kubelet reports it.
	c.started = c.spec.StartupProbe == nil
	c.ready = c.started && c.spec.ReadinessProbe == nil && !c.regularInit()
	r.mu.Unlock()
	r.changed()
	probesDone := make(chan struct{})
	go func() {
		defer close(probesDone)
		defer r.guard()
		r.probeLoop(c, a, a.proc.Done())
	}()

	select {
	case <-a.proc.Done():
	case <-stop.done():
		stopped = true
		terminate(a.proc, stop.killAt())
	}
	// Like a container's init dying, the main process exiting ends the
	// whole container: kill what is left of its process group.
	_ = a.proc.SignalGroup(syscall.SIGKILL)
	forgetProc(r.p.cfg.StateDir, a.proc.Pid)
	<-probesDone
	res := a.result(startedAt, &c.spec)
	releaseCgroup(a.cgroup)

	r.mu.Lock()
	res.ContainerID = c.containerID
	c.state = corev1.ContainerState{Terminated: res}
	c.started = false
	c.ready = c.regularInit() && res.ExitCode == 0
	r.mu.Unlock()
	r.changed()
	return res.ExitCode, stopped || stop.closed(), time.Since(startedAt), nil
}

// nextRestartCount is the restart count of the attempt about to start. A
// restart of all containers counted it already when it removed the last.
func nextRestartCount(c *ctr) int32 {
	if c.everStarted && !c.removed {
		return c.restartCount + 1
	}
	return c.restartCount
}

// terminate sends SIGTERM to the process group and SIGKILL at killAt.
func terminate(p *proc.Process, killAt time.Time) {
	_ = p.SignalGroup(syscall.SIGTERM)
	t := time.NewTimer(time.Until(killAt))
	defer t.Stop()
	select {
	case <-p.Done():
	case <-t.C:
		_ = p.SignalGroup(syscall.SIGKILL)
		<-p.Done()
	}
}

// supervise runs c until it will not run again, its supervision stops, or
// one of its exits restarts all the pod's containers.
func (r *podRun) supervise(c *ctr, sv *supervision) {
	defer close(sv.done)
	stop := sv.stop
	for r.mayStart(sv) {
		code, stopped, ranFor, waitErr := r.runOnce(c, stop)
		var pe pullError
		if errors.As(waitErr, &pe) {
			if !r.pullBackoff(c, pe, stop) {
				return
			}
			continue
		}
		if waitErr != nil {
			r.mu.Lock()
			c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "CreateContainerConfigError", Message: waitErr.Error()}}
			d := c.nextBackoff(r.p.cfg.RestartBackoff, 0)
			r.mu.Unlock()
			r.changed()
			if !sleep(stop, min(d, 10*time.Second)) {
				return
			}
			continue
		}
		if stopped || r.restartAllOnExit(c, code) {
			return
		}
		if !c.runsAgain(r.policy, code) {
			r.mu.Lock()
			c.final = true
			r.mu.Unlock()
			r.changed()
			return
		}
		if !r.crashLoopBackoff(c, ranFor, stop) {
			return
		}
	}
}

// crashLoopBackoff waits before c's next attempt, reporting CrashLoopBackOff
// with the attempt that ended as its last state, as the kubelet does for
// every restart but the first. It reports whether to go on.
func (r *podRun) crashLoopBackoff(c *ctr, ranFor time.Duration, stop *stopper) bool {
	r.mu.Lock()
	d := c.nextBackoff(r.p.cfg.RestartBackoff, ranFor)
	if d == 0 {
		// Restarted at once: the kubelet reports no back-off.
		r.mu.Unlock()
		return true
	}
	c.last = c.state
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason:  "CrashLoopBackOff",
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", d, c.spec.Name, r.name, r.namespace, r.pod.UID),
	}}
	r.mu.Unlock()
	r.changed()
	return sleep(stop, d)
}

// pullBackoff reports a failed image pull as the kubelet does, ErrImagePull
// and then ImagePullBackOff until the next try, with a back-off of its own
// (doubling up to 5 minutes). It reports whether to go on.
func (r *podRun) pullBackoff(c *ctr, pe pullError, stop *stopper) bool {
	r.mu.Lock()
	d := c.nextPullBackoff(r.p.cfg.RestartBackoff)
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: pe.Error()}}
	r.mu.Unlock()
	r.changed()
	r.logf("container %s: %v (next try in %s)", c.spec.Name, pe, d)
	shown := min(d/2, 5*time.Second)
	if !sleep(stop, shown) {
		return false
	}
	r.mu.Lock()
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %v", c.spec.Image, pe)}}
	r.mu.Unlock()
	r.changed()
	return sleep(stop, d-shown)
}

// sleep waits d unless stop fires first; it reports whether to go on.
func sleep(stop *stopper, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop.done():
		return false
	}
}

// runInits runs the init containers of round rd in order; sidecars
// (restartPolicy Always) are started and kept running. It reports whether
// the app containers may start.
func (r *podRun) runInits(rd *round) bool {
	for _, c := range r.inits {
		sv, ok := r.enroll(rd, c)
		if !ok {
			return false
		}
		r.workers.Add(1)
		if c.sidecar {
			go func() {
				defer r.workers.Done()
				defer r.guard()
				r.supervise(c, sv)
			}()
			if !r.waitStarted(rd, c) {
				return false
			}
			continue
		}
		r.supervise(c, sv)
		r.workers.Done()
		if r.roundOver(rd) {
			return false
		}
		r.mu.Lock()
		t := c.state.Terminated
		r.mu.Unlock()
		if t == nil || t.ExitCode != 0 {
			// It failed and may not run again (by its own policy or the
			// pod's): the pod has failed.
			r.mu.Lock()
			r.phase = corev1.PodFailed
			r.mu.Unlock()
			r.changed()
			return false
		}
	}
	r.mu.Lock()
	r.initDone, r.reinit = true, false
	r.mu.Unlock()
	r.changed()
	return true
}

// waitStarted waits until a sidecar's process runs (no startup probes).
func (r *podRun) waitStarted(rd *round, c *ctr) bool {
	for {
		r.mu.Lock()
		ok := c.started
		r.mu.Unlock()
		if ok {
			return true
		}
		if r.roundOver(rd) || !sleep(rd.stop, 100*time.Millisecond) {
			return false
		}
	}
}

// runMains runs the app containers of round rd until none will run again,
// then decides the pod's phase and stops the sidecars. Only the first round
// resumes what the pod's status said before a node restart.
func (r *podRun) runMains(rd *round) {
	r.mu.Lock()
	prev := map[string]corev1.ContainerStatus{}
	if rd.first {
		for _, s := range r.pod.Status.ContainerStatuses {
			prev[s.Name] = s
		}
	}
	var toRun []*ctr
	for _, c := range r.mains {
		s, had := prev[c.spec.Name]
		if c.resume(r.policy, s, had) {
			toRun = append(toRun, c)
		}
	}
	r.mu.Unlock()
	r.changed()

	var running []*supervision
	for _, c := range toRun {
		sv, ok := r.enroll(rd, c)
		if !ok {
			break
		}
		running = append(running, sv)
		r.workers.Add(1)
		go func() {
			defer r.workers.Done()
			defer r.guard()
			r.supervise(c, sv)
		}()
	}
	for _, sv := range running {
		<-sv.done
	}
	if r.roundOver(rd) {
		return
	}
	r.mu.Lock()
	r.phase = corev1.PodSucceeded
	for _, c := range r.mains {
		if t := c.state.Terminated; t == nil || t.ExitCode != 0 {
			r.phase = corev1.PodFailed
		}
	}
	r.mu.Unlock()
	rd.sidecars.close(time.Now().Add(r.terminationGrace()))
	r.changed()
}
