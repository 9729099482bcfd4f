package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// PodProcesses are the host processes of a pod on the local cluster's
// process node, found by the pod name and namespace Muster puts in every
// container's environment. Tests and benchmarks kill them to lose a worker
// the way a crashed node would.
func PodProcesses(namespace, pod string) []int {
	want := []string{
		musterv1.EnvPodName + "=" + pod + "\x00",
		musterv1.EnvJobNamespace + "=" + namespace + "\x00",
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !strings.Contains(string(raw), want[0]) || !strings.Contains(string(raw), want[1]) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parents maps every host process to its parent, from /proc/PID/stat.
func parents() map[int]int {
	out := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(f) < 2 {
			continue
		}
		pid, err1 := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			out[pid] = ppid
		}
	}
	return out
}

// Children are the processes whose parent is pid.
func Children(pid int) []int {
	var out []int
	for child, parent := range parents() {
		if parent == pid {
			out = append(out, child)
		}
	}
	return out
}

// Descendants are every process under pid.
func Descendants(pid int) []int {
	all := parents()
	var out []int
	var walk func(int)
	walk = func(p int) {
		for child, parent := range all {
			if parent == p {
				out = append(out, child)
				walk(child)
			}
		}
	}
	walk(pid)
	return out
}

// TopmostAncestor is the highest ancestor of pid whose command line holds
// word, or 0.
func TopmostAncestor(pid int, word string) int {
	all := parents()
	found := 0
	for p, ok := all[pid]; ok && p > 1; p, ok = all[p] {
		if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); strings.Contains(string(cmd), word) {
			found = p
		}
	}
	return found
}

// ProcessWith is a host process whose environment holds every one of vars
// (NAME=VALUE), or 0.
func ProcessWith(vars ...string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		all := true
		for _, v := range vars {
			all = all && strings.Contains(string(env), v+"\x00")
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); all && err == nil {
			return pid
		}
	}
	return 0
}
