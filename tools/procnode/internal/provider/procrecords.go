package provider

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Container processes are recorded under DIR/procs so that a node started
// after a crash (or --cleanup) can kill what the crashed node left running.
// The process start time guards against a recycled PID.

func procsDir(stateDir string) string { return filepath.Join(stateDir, "procs") }

func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name may contain spaces; fields restart after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 of the whole line: starttime
}

func recordProc(stateDir string, pid int) {
	d := procsDir(stateDir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(d, strconv.Itoa(pid)), []byte(startTime(pid)), 0o644)
}

func forgetProc(stateDir string, pid int) {
	_ = os.Remove(filepath.Join(procsDir(stateDir), strconv.Itoa(pid)))
}

// KillRecorded kills the process groups of containers recorded by an
// earlier run and forgets them. It returns how many groups it signalled.
func KillRecorded(stateDir string) int {
	entries, err := os.ReadDir(procsDir(stateDir))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		path := filepath.Join(procsDir(stateDir), e.Name())
		if err != nil {
			_ = os.Remove(path)
			continue
		}
		want, _ := os.ReadFile(path)
		if st := startTime(pid); st != "" && st == string(want) {
			if syscall.Kill(-pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		_ = os.Remove(path)
	}
	return n
}
