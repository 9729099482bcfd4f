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
		c.everStarted = true
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
	c.everStarted = true
	c.cur = a
	c.containerID = fmt.Sprintf("procnode://%d", a.proc.Pid)
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}}
	// Without probes a running container counts as started and ready;
	// with them, probeLoop decides.
	c.started = c.spec.StartupProbe == nil
	c.ready = c.started && c.spec.ReadinessProbe == nil
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
	c.state = corev1.ContainerState{Terminated: res}
	c.started = false
	c.ready = false
	r.mu.Unlock()
	r.changed()
	return res.ExitCode, stopped || stop.closed(), time.Since(startedAt), nil
}

// nextRestartCount is the restart count of the attempt about to start.
func nextRestartCount(c *ctr) int32 {
	if c.everStarted {
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

// supervise runs c under policy until it will not run again or stop fires.
func (r *podRun) supervise(c *ctr, policy corev1.RestartPolicy, stop *stopper) {
	for !stop.closed() {
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
		if stopped {
			return
		}
		if !shouldRestart(policy, code) {
			r.mu.Lock()
			c.final = true
			r.mu.Unlock()
			r.changed()
			return
		}
		r.mu.Lock()
		d := c.nextBackoff(r.p.cfg.RestartBackoff, ranFor)
		c.last = c.state
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", d, c.spec.Name, r.name, r.namespace, r.pod.UID),
		}}
		r.mu.Unlock()
		r.changed()
		if !sleep(stop, d) {
			return
		}
	}
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

// runInits runs the init containers in order; sidecars (restartPolicy
// Always) are started and kept running. It reports whether the app
// containers may start.
func (r *podRun) runInits() bool {
	r.mu.Lock()
	policy := r.pod.Spec.RestartPolicy
	inits := r.inits
	r.mu.Unlock()
	for _, c := range inits {
		if c.sidecar {
			r.workers.Add(1)
			go func() {
				defer r.workers.Done()
				defer r.guard()
				r.supervise(c, corev1.RestartPolicyAlways, r.sidecars)
			}()
			if !r.waitStarted(c) {
				return false
			}
			continue
		}
		initPolicy := corev1.RestartPolicyOnFailure
		if policy == corev1.RestartPolicyNever {
			initPolicy = corev1.RestartPolicyNever
		}
		r.workers.Add(1)
		r.supervise(c, initPolicy, r.halt)
		r.workers.Done()
		if r.halt.closed() {
			return false
		}
		r.mu.Lock()
		t := c.state.Terminated
		r.mu.Unlock()
		if t == nil || t.ExitCode != 0 {
			// Only reachable with restartPolicy Never: the pod has failed.
			r.mu.Lock()
			r.phase = corev1.PodFailed
			r.mu.Unlock()
			r.changed()
			return false
		}
	}
	r.mu.Lock()
	r.initDone = true
	r.mu.Unlock()
	r.changed()
	return true
}

// waitStarted waits until a sidecar's process runs (no startup probes).
func (r *podRun) waitStarted(c *ctr) bool {
	for {
		r.mu.Lock()
		ok := c.started
		r.mu.Unlock()
		if ok {
			return true
		}
		if !sleep(r.halt, 100*time.Millisecond) {
			return false
		}
	}
}

// runMains runs the app containers until none will run again, then decides
// the pod's phase and stops the sidecars.
func (r *podRun) runMains() {
	r.mu.Lock()
	policy := r.pod.Spec.RestartPolicy
	prev := map[string]corev1.ContainerStatus{}
	for _, s := range r.pod.Status.ContainerStatuses {
		prev[s.Name] = s
	}
	var toRun []*ctr
	for _, c := range r.mains {
		s, had := prev[c.spec.Name]
		if c.resume(policy, s, had) {
			toRun = append(toRun, c)
		}
	}
	r.mu.Unlock()
	r.changed()

	done := make(chan struct{}, len(toRun))
	for _, c := range toRun {
		r.workers.Add(1)
		go func() {
			defer r.workers.Done()
			defer func() { done <- struct{}{} }()
			defer r.guard()
			r.supervise(c, policy, r.halt)
		}()
	}
	for range toRun {
		<-done
	}
	if r.halt.closed() {
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
	r.sidecars.close(time.Now().Add(r.terminationGrace()))
	r.changed()
}
