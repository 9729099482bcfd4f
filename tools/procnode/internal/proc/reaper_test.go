package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func wait(t *testing.T, p *Process) syscall.WaitStatus {
	t.Helper()
	select {
	case <-p.Done():
		return p.Status()
	case <-time.After(10 * time.Second):
		t.Fatal("process was not reaped")
		return 0
	}
}

func TestReaper(t *testing.T) {
	if err := InitReaper(); err != nil {
		t.Fatal(err)
	}
	p, err := Start(exec.Command("sh", "-c", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	if ws := wait(t, p); !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("status = %v", ws)
	}

	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err = Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SignalGroup(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ws := wait(t, p); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("status = %v", ws)
	}
}

// An orphaned grandchild is re-parented to us (the subreaper) and must not
// stay a zombie.
func TestOrphansAreReaped(t *testing.T) {
	if err := InitReaper(); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "sleep 0.3 & echo $!")
	cmd.Stdout = w
	p, err := Start(cmd)
	_ = w.Close() // the child has its own copy
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := r.Read(buf)
	orphan, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("orphan pid %q: %v", buf[:n], err)
	}
	wait(t, p)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := os.Stat("/proc/" + strconv.Itoa(orphan))
		if os.IsNotExist(err) {
			return // exited and reaped
		}
		if time.Now().After(deadline) {
			stat, _ := os.ReadFile("/proc/" + strconv.Itoa(orphan) + "/stat")
			t.Fatalf("orphan %d still present: %s", orphan, stat)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
