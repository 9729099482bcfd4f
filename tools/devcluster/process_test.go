package devcluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/internal/procstat"
)

func TestStartAndStopByPidfile(t *testing.T) {
	c := &Config{StateDir: t.TempDir()}
	sleep := component{name: "sleeper", bin: "/bin/sleep", args: []string{"600"}, addr: "-",
		ready: func(context.Context) error { return nil }}
	started, err := c.start(context.Background(), sleep, 5*time.Second)
	if err != nil || !started {
		t.Fatalf("start: %v %v", started, err)
	}
	pid, ok := c.runningPID("sleeper")
	if !ok {
		t.Fatal("not running after start")
	}
	if again, err := c.start(context.Background(), sleep, 5*time.Second); err != nil || again {
		t.Errorf("second start: %v %v", again, err)
	}
	if !c.stop("sleeper", 5*time.Second) {
		t.Error("stop found nothing to stop")
	}
	if _, alive := processStarted(pid); alive {
		t.Error("still running after stop")
	}
	if _, err := os.Stat(c.pidFile("sleeper")); !os.IsNotExist(err) {
		t.Errorf("pidfile left: %v", err)
	}
	if c.stop("sleeper", time.Second) {
		t.Error("second stop claims it stopped something")
	}
}

func TestPidfileOfAnEarlierVersionIsCheckedByBinary(t *testing.T) {
	c := &Config{StateDir: t.TempDir()}
	// An earlier version recorded the pid and the binary only.
	writePidfile(t, c, "etcd", "/nonexistent/etcd")
	if _, ok := c.runningPID("etcd"); ok {
		t.Error("a pid running another program counts as the component")
	}
	writePidfile(t, c, "etcd", os.Args[0])
	if _, ok := c.runningPID("etcd"); !ok {
		t.Error("the recorded binary runs under the recorded pid, yet it does not count")
	}
}

func TestPidfileNamesOneProcessByItsStartTime(t *testing.T) {
	c := &Config{StateDir: t.TempDir()}
	started, ok := processStarted(os.Getpid())
	if !ok {
		t.Fatal("no start time for the test's own process")
	}
	// The binary recorded is not what runs: the start time alone decides,
	// since a process's command line reads empty for a moment during exec.
	writePidfile(t, c, "etcd", "/bin/anything", started)
	if pid, ok := c.runningPID("etcd"); !ok || pid != os.Getpid() {
		t.Errorf("the recorded process runs: got %d %v", pid, ok)
	}
	// The same pid started at another time is another process.
	writePidfile(t, c, "etcd", "/bin/anything", started+"1")
	if _, ok := c.runningPID("etcd"); ok {
		t.Error("a pid that started at another time counts as the component")
	}
}

// writePidfile records the test's own pid for a component, with what
// follows it in the file (the binary, the start time).
func writePidfile(t *testing.T, c *Config, name string, rest ...string) {
	t.Helper()
	line := strings.Join(append([]string{strconv.Itoa(os.Getpid())}, rest...), "\n") + "\n"
	if err := writeFile(c.pidFile(name), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStartReapsAComponentItCannotRecord(t *testing.T) {
	c := &Config{StateDir: t.TempDir()}
	// A directory where the pidfile goes: the pidfile cannot be written.
	if err := os.MkdirAll(c.pidFile("sleeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Run through a link of a name of its own (the test's pid in it: no
	// other run of this test has it), which the kernel keeps as its command
	// name, so that it can be told from any other process.
	comm := "reap-" + strconv.Itoa(os.Getpid())
	bin := filepath.Join(t.TempDir(), comm)
	if err := os.Symlink("/bin/sleep", bin); err != nil {
		t.Fatal(err)
	}
	sleep := component{name: "sleeper", bin: bin, args: []string{"600"}, addr: "-",
		ready: func(context.Context) error { return nil }}
	if _, err := c.start(context.Background(), sleep, 5*time.Second); err == nil || !strings.Contains(err.Error(), "recording sleeper") {
		t.Fatalf("want the pidfile's error, got %v", err)
	}
	// Nothing could stop it later: it must be gone, reaped, not left a
	// zombie child of ours.
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) {
			state, found := processNamed(comm)
			if state == "Z" {
				return false, errors.New("the component was killed but left unreaped, a zombie")
			}
			return !found, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// processNamed finds a process by its command name, and says its state
// (procstat's).
func processNamed(comm string) (state string, found bool) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		name, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSuffix(string(name), "\n") != comm {
			continue
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := procstat.Read(pid)
		if err != nil {
			continue // gone since its name was read
		}
		return st.State, true
	}
	return "", false
}

func TestStartReportsAnEarlyExitWithItsLog(t *testing.T) {
	c := &Config{StateDir: t.TempDir()}
	failing := component{name: "failing", bin: "/bin/sh", args: []string{"-c", "echo boom-from-component; exit 3"},
		ready: func(context.Context) error { return errors.New("not yet") }}
	_, err := c.start(context.Background(), failing, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "boom-from-component") {
		t.Errorf("want the log in the error, got %v", err)
	}
	if _, ok := c.runningPID("failing"); ok {
		t.Error("failed component still recorded as running")
	}
}

func TestCheckFreeNamesTheBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	comp := component{name: "kube-apiserver", listen: []listenAddr{{"tcp", addr}}}
	c := &Config{Command: "go run ./tools/musterdev"}
	err = c.checkFree(comp)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("busy port: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "`go run ./tools/musterdev down`") {
		t.Errorf("the hint must name the command as the user runs it: %v", err)
	}
	_ = ln.Close()
	if err := c.checkFree(comp); err != nil {
		t.Errorf("free port: %v", err)
	}
}
