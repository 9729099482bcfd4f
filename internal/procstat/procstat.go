// Package procstat reads what Linux says of a process in /proc/<pid>/stat:
// its state, when it started and the CPU it has used. The local cluster's
// tools use it to tell their own processes from ones that reused a pid,
// and the benchmark to measure the components' CPU.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is a process's state, start time and CPU time.
type Stat struct {
	// State is one letter: R running, S sleeping, Z zombie and so on.
	State string
	// Started is when the process started, in clock ticks after boot, as
	// the kernel writes it. A pid and its start time name one process for
	// as long as the machine runs; it is set at fork, so it is there while
	// the process still execs.
	Started string
	// CPUTicks is the user and system CPU time, in clock ticks (USER_HZ).
	CPUTicks uint64
}

// TicksPerSecond is USER_HZ, the unit of CPUTicks: 100 on every Linux
// architecture Go runs on.
const TicksPerSecond = 100

// Alive reports whether the process runs or can run: it is not a zombie.
func (s Stat) Alive() bool { return s.State != "Z" }

// Read returns the stat of process pid.
func Read(pid int) (Stat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return parse(string(raw))
}

// parse reads a stat line. The fields follow the parenthesised command
// name, which may hold spaces and parentheses, so they are counted from
// its last ')': the state (field 3 of the line) first, utime and stime
// (14 and 15) eleven later, the start time (22) nineteen later.
func parse(line string) (Stat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("no command name in %q", line)
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("%d fields after the command name, want at least 20", len(f))
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("stime: %w", err)
	}
	return Stat{State: f[0], Started: f[19], CPUTicks: utime + stime}, nil
}
