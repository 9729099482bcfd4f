package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// operator is the operator binary run as a process of the test, started
// again after every kill. An exit the test did not cause is a failure: the
// operator crashed.
type operator struct {
	args    []string
	env     []string
	logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	killing bool
	kills   int
	crashes []string
}

// startOperator runs the operator with leader election off, so a restart
// acts at once instead of waiting out a lease the killed process held, and
// no other process can act meanwhile (the previous one is dead before its
// successor starts). extra adds flags; kubeconfig is the cluster's unless
// given.
func startOperator(t *testing.T, kubeconfig string, extra ...string) *operator {
	t.Helper()
	return startOperatorEnv(t, nil, kubeconfig, extra...)
}

// startOperatorEnv is startOperator with env added to the process's
// environment.
func startOperatorEnv(t *testing.T, env []string, kubeconfig string, extra ...string) *operator {
	t.Helper()
	if kubeconfig == "" {
		kubeconfig = cluster.Kubeconfig()
	}
	o := &operator{
		logPath: filepath.Join(t.TempDir(), "operator.log"),
		env:     env,
		args: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
			// Pod deletions and their reasons, for the report of a failure.
			"--zap-log-level=3",
		}, extra...),
	}
	if err := o.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		o.stop()
		if t.Failed() {
			t.Logf("operator log (%d kills):\n%s", o.kills, tailFile(o.logPath, 60))
		}
	})
	return o
}

func (o *operator) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	log, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(opBinary, o.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), o.env...)
	// It dies with the test, however the test ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the operator: %w", err)
	}
	exited := make(chan struct{})
	o.cmd, o.exited, o.killing = cmd, exited, false
	go func() {
		err := cmd.Wait()
		o.mu.Lock()
		if !o.killing {
			o.crashes = append(o.crashes, fmt.Sprintf("pid %d exited on its own: %v", cmd.Process.Pid, err))
		}
		o.mu.Unlock()
		close(exited)
	}()
	return nil
}

// kill SIGKILLs the operator and waits until it is dead.
func (o *operator) kill() {
	o.mu.Lock()
	cmd, exited := o.cmd, o.exited
	o.killing = true
	o.kills++
	o.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop ends the operator for good (the test's end).
func (o *operator) stop() {
	o.mu.Lock()
	cmd, exited := o.cmd, o.exited
	o.killing = true
	o.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-exited
}

// killEvery kills the operator and starts it again, over and over, a
// random time apart between min and max (drawn from rnd), until the
// returned stop is called; stop waits for the last restart.
func (o *operator) killEvery(t *testing.T, rnd *rand.Rand, minGap, maxGap time.Duration) (stop func()) {
	t.Helper()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(minGap + time.Duration(rnd.Int64N(int64(maxGap-minGap)))):
			}
			o.kill()
			// Sometimes at once, sometimes after the pods moved on.
			time.Sleep(time.Duration(rnd.IntN(700)) * time.Millisecond)
			if err := o.start(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// signal sends sig to the operator (SIGSTOP pauses it, SIGCONT wakes it).
func (o *operator) signal(sig syscall.Signal) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cmd.Process.Signal(sig)
}

// mayExit tells the operator's watcher that an exit from now on is not a
// crash (a leader that lost its lease stops), and returns a channel
// closed when it has exited.
func (o *operator) mayExit() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.killing = true
	return o.exited
}

func (o *operator) killCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.kills
}

// crashed lists the exits the test did not cause.
func (o *operator) crashed() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.crashes...)
}

// grepFile returns the lines of a file that contain s.
func grepFile(path, s string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func tailFile(path string, n int) string {
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
