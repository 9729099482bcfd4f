package testutil

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The /proc walks find a shell and the sleep it runs under this test.
func TestProcessWalks(t *testing.T) {
	sh := exec.Command("/bin/sh", "-c", "sleep 30; true")
	sh.Env = append(os.Environ(), "MUSTER_PROCS_TEST="+strconv.Itoa(os.Getpid()))
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sh.Process.Kill(); _ = sh.Wait() }()
	var sleep []int
	for range 200 {
		if sleep = Children(sh.Process.Pid); len(sleep) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond) // bounded: the shell forks its sleep at once
	}
	if len(sleep) != 1 {
		t.Fatalf("children of the shell: %v", sleep)
	}
	defer func() { _ = exec.Command("/bin/kill", strconv.Itoa(sleep[0])).Run() }()
	if d := Descendants(os.Getpid()); !slices.Contains(d, sh.Process.Pid) || !slices.Contains(d, sleep[0]) {
		t.Errorf("descendants of the test %v lack the shell %d or its sleep %d", d, sh.Process.Pid, sleep[0])
	}
	if got := TopmostAncestor(sleep[0], "sleep 30; true"); got != sh.Process.Pid {
		t.Errorf("topmost ancestor of the sleep running the shell's script: %d, want %d", got, sh.Process.Pid)
	}
	// The sleep inherits the shell's environment: either will do.
	if got := ProcessWith("MUSTER_PROCS_TEST=" + strconv.Itoa(os.Getpid())); got != sh.Process.Pid && got != sleep[0] {
		t.Errorf("process with the shell's variable: %d, want %d or %d", got, sh.Process.Pid, sleep[0])
	}
}
