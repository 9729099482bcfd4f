package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Version is the cgroup interface the host offers.
type Version int

// Versions.
const (
	None Version = iota
	V1
	V2
)

func (v Version) String() string {
	return [...]string{"none", "v1", "v2"}[v]
}

// Manager makes the node's cgroups under one parent of its own.
type Manager struct {
	version Version
	root    string // the cgroup filesystem, normally /sys/fs/cgroup
	parent  string // the node's folder under each hierarchy
}

// Detect finds the cgroup interface mounted at root and prepares the
// node's parent group. A host without a usable one gets a Manager that
// makes no groups (Version None).
func Detect(root, parent string) *Manager {
	m := &Manager{root: root, parent: parent}
	switch {
	case exists(filepath.Join(root, "cgroup.controllers")):
		m.version = V2
		// Children get cpu and memory only if every ancestor delegates
		// them; the root may refuse, leaving the node without limits.
		if enable(root) != nil {
			m.version = None
		}
	case exists(filepath.Join(root, "cpu", "cpu.shares")) && exists(filepath.Join(root, "memory", "memory.limit_in_bytes")):
		m.version = V1
	}
	return m
}

// Version is the interface in use.
func (m *Manager) Version() Version { return m.version }

// Group is one container attempt's cgroup: a folder per hierarchy.
type Group struct {
	version Version
	// Dirs are the group's folders; a process joins by writing its pid to
	// each one's cgroup.procs.
	Dirs []string
}

// Create makes the group name (e.g. <pod uid>/<container>-<attempt>) under
// the node's parent, limited by l. A Manager without cgroups returns an
// empty group.
func (m *Manager) Create(name string, l Limits) (*Group, error) {
	g := &Group{version: m.version}
	switch m.version {
	case V2:
		dir := filepath.Join(m.root, m.parent, name)
		if err := m.mkdirV2(dir); err != nil {
			return nil, err
		}
		g.Dirs = []string{dir}
		quota := "max"
		if l.CPUQuota > 0 {
			quota = strconv.FormatInt(l.CPUQuota, 10)
		}
		mem := "max"
		if l.Memory > 0 {
			mem = strconv.FormatInt(l.Memory, 10)
		}
		return g, writeAll(dir, map[string]string{
			"cpu.max":    quota + " " + strconv.Itoa(cfsPeriod),
			"cpu.weight": strconv.FormatUint(weight(l.CPUShares), 10),
			"memory.max": mem,
		})
	case V1:
		cpu := filepath.Join(m.root, "cpu", m.parent, name)
		mem := filepath.Join(m.root, "memory", m.parent, name)
		for _, d := range []string{cpu, mem} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		g.Dirs = []string{cpu, mem}
		files := map[string]string{
			"cpu.cfs_period_us": strconv.Itoa(cfsPeriod),
			"cpu.cfs_quota_us":  "-1",
			"cpu.shares":        strconv.FormatUint(l.CPUShares, 10),
		}
		if l.CPUQuota > 0 {
			files["cpu.cfs_quota_us"] = strconv.FormatInt(l.CPUQuota, 10)
		}
		if err := writeAll(cpu, files); err != nil {
			return nil, err
		}
		if l.Memory > 0 {
			return g, writeAll(mem, map[string]string{"memory.limit_in_bytes": strconv.FormatInt(l.Memory, 10)})
		}
	}
	return g, nil
}

// mkdirV2 creates dir and its missing ancestors below the root, each
// delegating cpu and memory to its children.
func (m *Manager) mkdirV2(dir string) error {
	rel, err := filepath.Rel(m.root, dir)
	if err != nil {
		return err
	}
	cur := m.root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		if err := os.Mkdir(cur, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
		if i < len(parts)-1 {
			if err := enable(cur); err != nil {
				return err
			}
		}
	}
	return nil
}

// enable delegates the cpu and memory controllers to dir's children.
func enable(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory"), 0)
}

// OOMKilled is whether the kernel's OOM killer acted in the group: the
// container ran out of its memory limit.
func (g *Group) OOMKilled() bool {
	switch g.version {
	case V2:
		return counter(filepath.Join(g.Dirs[0], "memory.events"), "oom_kill") > 0
	case V1:
		mem := g.Dirs[1]
		if n := counter(filepath.Join(mem, "memory.oom_control"), "oom_kill"); n > 0 {
			return true
		}
		// Kernels before 4.13 do not count kills; a limit that was hit
		// is the next best sign.
		return counter(filepath.Join(mem, "memory.failcnt"), "") > 0
	}
	return false
}

// Remove deletes the group's folders; the kernel refuses while a process
// is in it, so call it after the container's processes are gone.
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.Dirs {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveEmpty deletes the folders of the group name (a pod's, say) that no
// longer hold groups or processes.
func (m *Manager) RemoveEmpty(name string) {
	for _, d := range m.dirs(name) {
		removeTree(d)
	}
}

// Cleanup removes what an earlier run of the node left: every empty group
// under its parent.
func (m *Manager) Cleanup() {
	m.RemoveEmpty("")
}

func (m *Manager) dirs(name string) []string {
	switch m.version {
	case V2:
		return []string{filepath.Join(m.root, m.parent, name)}
	case V1:
		return []string{filepath.Join(m.root, "cpu", m.parent, name), filepath.Join(m.root, "memory", m.parent, name)}
	}
	return nil
}

// removeTree removes the cgroup folders under dir, deepest first; cgroup
// folders are removed with rmdir, never by deleting their files.
func removeTree(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// counter reads "key value" from a flat keyed file, or the whole file as a
// number when key is empty.
func counter(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case key == "" && len(fields) == 1:
			n, _ := strconv.ParseInt(fields[0], 10, 64)
			return n
		case len(fields) == 2 && fields[0] == key:
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			return n
		}
	}
	return 0
}

func writeAll(dir string, files map[string]string) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names) // cfs_period before cfs_quota
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(files[n]), 0); err != nil {
			return fmt.Errorf("setting %s to %s: %w", filepath.Join(dir, n), files[n], err)
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Join moves the calling process into each folder of a group: the shim
// calls it before it execs the container's command, so every process the
// command starts is inside.
func Join(dirs []string) error {
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), pid, 0); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", d, err)
		}
	}
	return nil
}

// Kill sends SIGKILL to every process left in the group, those that left
// the container's process group included.
func (g *Group) Kill() {
	for _, d := range g.Dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
