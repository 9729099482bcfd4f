package devcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/muster-dev/muster/internal/procstat"
)

// component is one server process of the cluster.
type component struct {
	name string
	bin  string
	args []string
	// addr is what status shows; listen are the addresses that must be free
	// before it starts ("tcp" or "udp" + host:port).
	addr   string
	listen []listenAddr
	// ready returns nil once the component serves.
	ready func(ctx context.Context) error
}

type listenAddr struct{ network, addr string }

func tcp(port int) listenAddr { return listenAddr{"tcp", fmt.Sprintf("127.0.0.1:%d", port)} }
func udp(port int) listenAddr { return listenAddr{"udp", fmt.Sprintf("127.0.0.1:%d", port)} }

func (c *Config) pidFile(name string) string { return c.path("run", name+".pid") }

// runningPID returns the pid of a component started from this state dir if
// that process still runs. The pidfile holds the pid, the binary and the
// process's start time: a pid and its start time name one process for as
// long as the machine runs, so a stale pidfile never names an unrelated
// process that reused the pid. (The binary is not enough on its own: for a
// moment during exec a process's command line reads empty.)
func (c *Config) runningPID(name string) (int, bool) {
	data, err := os.ReadFile(c.pidFile(name))
	if err != nil {
		return 0, false
	}
	fields := strings.Split(strings.TrimSpace(string(data)), "\n")
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 || len(fields) < 2 {
		return 0, false
	}
	if len(fields) < 3 {
		// Written by an earlier version, without the start time.
		return pid, processRunsBinary(pid, fields[1])
	}
	started, ok := processStarted(pid)
	return pid, ok && started == fields[2]
}

// processStarted returns when a live (not zombie) process started.
func processStarted(pid int) (string, bool) {
	st, err := procstat.Read(pid)
	return st.Started, err == nil && st.Alive()
}

// processRunsBinary reports whether pid is a live process of bin.
func processRunsBinary(pid int, bin string) bool {
	if _, ok := processStarted(pid); !ok {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(argv0) == bin
}

// start runs a component in its own session (so it outlives `muster-dev up`
// and no terminal signal reaches it), logging to <state>/logs/<name>.log,
// and waits until it is ready. If it exits or is not ready in time, it is
// stopped and the error carries the end of its log.
//
// It reports whether it started the component (false: it already ran).
func (c *Config) start(ctx context.Context, comp component, timeout time.Duration) (bool, error) {
	started := time.Now()
	if pid, ok := c.runningPID(comp.name); ok {
		c.logf("%-24s already running (pid %d, %s)", comp.name, pid, comp.addr)
		return false, nil
	}
	if err := c.checkFree(comp); err != nil {
		return false, err
	}
	logPath := c.logFile(comp.name)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return false, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return false, err
	}
	// The child has its own copy of the descriptor.
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(comp.bin, comp.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = c.StateDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", comp.name, err)
	}
	// The start time is set at fork, so it is there however far exec is,
	// and stays while the process is a zombie we have not reaped yet.
	forked, err := procstat.Read(cmd.Process.Pid)
	if err != nil {
		abandon(cmd)
		return false, fmt.Errorf("starting %s: %w", comp.name, err)
	}
	if err := writeFile(c.pidFile(comp.name), []byte(fmt.Sprintf("%d\n%s\n%s\n", cmd.Process.Pid, comp.bin, forked.Started)), 0o644); err != nil {
		abandon(cmd)
		return false, fmt.Errorf("recording %s: %w", comp.name, err)
	}
	// Reap it when it exits while we still run (tests keep running long
	// after up), so a dead component never lingers as a zombie that looks
	// alive.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	readyCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	readyErr := make(chan error, 1)
	go func() { readyErr <- poll(readyCtx, comp.ready) }()
	select {
	case err = <-readyErr:
	case werr := <-exited:
		err = fmt.Errorf("exited during start-up: %w", werr)
	}
	if err != nil {
		c.stop(comp.name, 5*time.Second)
		if ctx.Err() != nil {
			return false, fmt.Errorf("interrupted while starting %s", comp.name)
		}
		return false, fmt.Errorf("%s did not become ready: %w\n--- last lines of %s:\n%s", comp.name, err, logPath, tail(logPath, 25))
	}
	c.logf("%-24s started in %-8s (pid %d, %s)", comp.name, since(started), cmd.Process.Pid, comp.addr)
	return true, nil
}

// abandon kills a component that was started but cannot be recorded, and
// reaps it: nothing could stop it later, and unreaped it would stay a
// zombie for as long as we run.
func abandon(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// poll calls check every 200ms until it succeeds or ctx ends.
func poll(ctx context.Context, check func(context.Context) error) error {
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop terminates a component by the pid in its pidfile: SIGTERM to the
// process (which may stop its own children in order, as the process node
// stops its pods), SIGKILL to its whole process group after grace. It
// reports whether it was running.
func (c *Config) stop(name string, grace time.Duration) bool {
	defer func() { _ = os.Remove(c.pidFile(name)) }()
	pid, ok := c.runningPID(name)
	if !ok {
		return false
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for {
		if _, ok := c.runningPID(name); !ok {
			return true
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tail returns the last n lines of a log file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkFree fails with a clear message when another program already
// listens on one of the component's addresses.
func (c *Config) checkFree(comp component) error {
	for _, l := range comp.listen {
		if err := probeFree(l); err != nil {
			return fmt.Errorf("%s cannot start: %s %s is in use by another program (%w); stop it, or run `%s` if it is a leftover dev cluster", comp.name, l.network, l.addr, err, c.command("down"))
		}
	}
	return nil
}

// ComponentPID is the process id of a running component of the cluster,
// e.g. "kube-apiserver", for tools that measure it.
func (c *Config) ComponentPID(name string) (int, bool) { return c.runningPID(name) }
