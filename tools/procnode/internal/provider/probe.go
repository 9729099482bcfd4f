package provider

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
	"github.com/muster-dev/muster/tools/procnode/internal/proc"
)

// probeLoop runs a container attempt's startup, liveness and readiness
// probes like the kubelet's prober: readiness drives the Ready flag, and a
// failed startup or liveness probe kills the attempt so the restart policy
// applies. It returns when the attempt ends.
func (r *podRun) probeLoop(c *ctr, a *attempt, ended <-chan struct{}) {
	spec := &c.spec
	startup, live, ready := spec.StartupProbe, spec.LivenessProbe, spec.ReadinessProbe
	if startup == nil && live == nil && ready == nil {
		return
	}
	started := startup == nil
	r.mu.Lock()
	c.started = started
	c.ready = ready == nil && started
	r.mu.Unlock()
	r.changed()

	begin := time.Now()
	ss, ls, rs := newProbeState(startup, begin), newProbeState(live, begin), newProbeState(ready, begin)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ended:
			return
		case <-tick.C:
		}
		now := time.Now()
		if !started {
			if r.runIfDue(c, a, ss, now) {
				if ss.ok >= 1 {
					// Liveness and readiness probes only start now, with
					// their initial delays counted from here.
					started = true
					begin = time.Now()
					ls, rs = newProbeState(live, begin), newProbeState(ready, begin)
					r.mu.Lock()
					c.started = true
					c.ready = ready == nil
					r.mu.Unlock()
					r.changed()
				} else if ss.failed >= threshold(startup.FailureThreshold, 3) {
					r.killForProbe(a, "Startup", startup)
					return
				}
			}
			continue
		}
		if r.runIfDue(c, a, ls, now) && ls.failed >= threshold(live.FailureThreshold, 3) {
			r.killForProbe(a, "Liveness", live)
			return
		}
		if r.runIfDue(c, a, rs, now) {
			r.updateReady(c, rs)
		}
	}
}

// probeState is the schedule and the current run of results of one probe.
type probeState struct {
	p          *corev1.Probe
	next       time.Time
	ok, failed int // consecutive successes and failures
}

// newProbeState returns nil for a nil probe; the first run is due after the
// probe's initial delay from begin.
func newProbeState(p *corev1.Probe, begin time.Time) *probeState {
	if p == nil {
		return nil
	}
	return &probeState{p: p, next: begin.Add(time.Duration(p.InitialDelaySeconds) * time.Second)}
}

// runIfDue runs the probe of s if it is due at now and records the result;
// it reports whether the probe ran.
func (r *podRun) runIfDue(c *ctr, a *attempt, s *probeState, now time.Time) bool {
	if s == nil || now.Before(s.next) {
		return false
	}
	s.next = now.Add(time.Duration(max(s.p.PeriodSeconds, 1)) * time.Second)
	if err := r.runProbe(c, a, s.p); err == nil {
		s.ok++
		s.failed = 0
	} else {
		s.failed++
		s.ok = 0
	}
	return true
}

// threshold is a probe's success or failure threshold, def when unset.
func threshold(n int32, def int32) int {
	if n <= 0 {
		return int(def)
	}
	return int(n)
}

// updateReady sets c's Ready flag from the readiness probe's results and
// reports a change.
func (r *podRun) updateReady(c *ctr, rs *probeState) {
	r.mu.Lock()
	was := c.ready
	if rs.ok >= threshold(rs.p.SuccessThreshold, 1) {
		c.ready = true
	} else if rs.failed >= threshold(rs.p.FailureThreshold, 3) {
		c.ready = false
	}
	changed := was != c.ready
	r.mu.Unlock()
	if changed {
		r.changed()
	}
}

// killForProbe stops an attempt whose startup or liveness probe failed.
func (r *podRun) killForProbe(a *attempt, kind string, p *corev1.Probe) {
	r.logf("%s probe failed for pid %d: killing the container", kind, a.proc.Pid)
	grace := r.terminationGrace()
	if p.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(max(*p.TerminationGracePeriodSeconds, 1)) * time.Second
	}
	go terminate(a.proc, time.Now().Add(grace))
}

func (r *podRun) runProbe(c *ctr, a *attempt, p *corev1.Probe) error {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	switch {
	case p.HTTPGet != nil:
		return r.probeHTTP(c, p.HTTPGet, timeout)
	case p.TCPSocket != nil:
		port, err := resolvePort(c, p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := r.dialPod(net.JoinHostPort(r.probeHost(p.TCPSocket.Host), strconv.Itoa(port)), timeout)
		if err == nil {
			_ = conn.Close() // connecting is the whole probe
		}
		return err
	case p.Exec != nil:
		return probeExec(a, p.Exec.Command, timeout)
	}
	return nil // gRPC probes are not supported: treated as passing
}

func (r *podRun) probeHost(host string) string {
	if host != "" {
		return host
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.podIP
}

// dialPod connects from inside the pod's network namespace, the only place
// pod addresses are reachable from.
func (r *podRun) dialPod(addr string, timeout time.Duration) (net.Conn, error) {
	r.mu.Lock()
	nsPath := ""
	if r.net != nil {
		nsPath = r.net.Path
	}
	r.mu.Unlock()
	if nsPath == "" {
		return net.DialTimeout("tcp", addr, timeout)
	}
	var conn net.Conn
	err := netsetup.InNetNS(nsPath, func() (e error) {
		conn, e = net.DialTimeout("tcp", addr, timeout)
		return
	})
	return conn, err
}

func (r *podRun) probeHTTP(c *ctr, h *corev1.HTTPGetAction, timeout time.Duration) error {
	port, err := resolvePort(c, h.Port)
	if err != nil {
		return err
	}
	scheme := "http"
	if h.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	host := r.probeHost(h.Host)
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: h.Path}
	if u.Path == "" {
		u.Path = "/"
	}
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
				return r.dialPod(addr, timeout)
			},
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // as the kubelet's prober
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, hd := range h.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	req.Header.Set("User-Agent", "kube-probe/1.36")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close() // only the status code is checked
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return nil
}

// resolvePort turns a named container port into its number.
func resolvePort(c *ctr, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("port %q not found in container %s", p.StrVal, c.spec.Name)
}

// probeExec runs the probe command inside the container with nsenter.
func probeExec(a *attempt, command []string, timeout time.Duration) error {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return err
	}
	args := append([]string{"--target", strconv.Itoa(a.proc.Pid), "--mount", "--uts", "--net", "--root", "--wd", "--"}, command...)
	cmd := exec.Command(nsenter, args...)
	cmd.Env = a.env
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() { _ = devnull.Close() }() // the child has its own copy
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := proc.Start(cmd)
	if err != nil {
		return err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.Done():
	case <-t.C:
		_ = p.SignalGroup(syscall.SIGKILL)
		<-p.Done()
		return fmt.Errorf("exec probe timed out after %s", timeout)
	}
	if ws := p.Status(); !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("exec probe failed: %v", ws)
	}
	return nil
}
