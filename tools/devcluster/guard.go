package devcluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// GuardTeardown tears the cluster down when a test binary is interrupted
// or is about to hit go test's -timeout, which kills the binary before any
// deferred teardown runs. stop ends the guard.
func GuardTeardown(c *Config) (stop func()) {
	var deadline time.Duration
	if f := flag.Lookup("test.timeout"); f != nil {
		deadline, _ = time.ParseDuration(f.Value.String())
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	var near <-chan time.Time
	if deadline > 2*time.Minute {
		near = time.After(deadline - time.Minute)
	}
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			c.logf("%v: tearing the cluster down", s)
		case <-near:
			c.logf("the test timeout is near: tearing the cluster down")
		case <-done:
			return
		}
		_ = Down(context.Background(), c)
		os.Exit(1)
	}()
	return func() { signal.Stop(sig); close(done) }
}

// Kill SIGKILLs one component of a running cluster, as a crash would, and
// waits until it is gone. Up starts it again.
//
// Gone is reaped, not a zombie: the leader thread of a dying process turns
// zombie before its other threads have exited and released its sockets, so
// its port may still be taken then.
func Kill(c *Config, name string) error {
	pid, ok := c.runningPID(name)
	if !ok {
		return fmt.Errorf("%s is not running", name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", name, pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d) still runs 10s after SIGKILL", name, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PrefixWriter writes to stderr with a prefix on each write: the cluster's
// progress lines (one per write) marked in a test's output.
type PrefixWriter string

func (p PrefixWriter) Write(b []byte) (int, error) {
	if _, err := os.Stderr.Write(append([]byte(p), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}
