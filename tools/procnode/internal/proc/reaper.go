// Package proc starts pod processes and reaps every child of the node.
//
// The node makes itself a child subreaper, so orphaned grandchildren of pod
// processes are re-parented to it instead of to PID 1 (which, on some
// machines, never reaps and would collect zombies). A single reaper loop
// calls wait4(-1); therefore nothing else in the node may wait for children
// (no exec.Cmd.Wait/Run/Output): start every child through Start.
package proc

import (
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Process is a started child whose exit the reaper reports.
type Process struct {
	Pid     int
	Started time.Time
	done    chan struct{}
	status  syscall.WaitStatus
}

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Status returns the wait status; valid after Done is closed.
func (p *Process) Status() syscall.WaitStatus { return p.status }

// SignalGroup signals the process group the process leads.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}

var (
	mu      sync.Mutex
	live    = map[int]*Process{}
	started bool
)

// InitReaper makes the node a subreaper and starts the reaping loop. Call it
// once, before starting processes.
func InitReaper() error {
	mu.Lock()
	defer mu.Unlock()
	if started {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	started = true
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, syscall.SIGCHLD)
	go func() {
		// SIGCHLD coalesces, and a tick covers anything missed.
		t := time.NewTicker(time.Second)
		for {
			select {
			case <-ch:
			case <-t.C:
			}
			reap()
		}
	}()
	return nil
}

// reap collects every exited child. It holds mu during wait4 so a child that
// exits right after fork is only reaped once Start has registered it.
func reap() {
	mu.Lock()
	defer mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		if p, ok := live[pid]; ok {
			delete(live, pid)
			p.status = ws
			close(p.done)
		}
		// Other pids are orphans adopted as subreaper: reaping is all they need.
	}
}

// Start starts cmd (which must not be waited for by anyone else) and
// registers it with the reaper.
func Start(cmd *exec.Cmd) (*Process, error) {
	mu.Lock()
	defer mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Pid: cmd.Process.Pid, Started: time.Now(), done: make(chan struct{})}
	live[p.Pid] = p
	return p, nil
}
