package shim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/muster-dev/muster/tools/procnode/internal/cgroup"
)

// startError is a failure to start the container, with its exit code.
type startError struct {
	code int
	msg  string
}

func (e *startError) Error() string { return e.msg }

func fail(code int, format string, a ...any) error {
	return &startError{code: code, msg: fmt.Sprintf(format, a...)}
}

// Main runs the shim; args are the arguments after "shim". It only returns
// by exiting: on success the process image is replaced by the command.
func Main(args []string) {
	// Namespace switches below apply to this OS thread, which then execs.
	runtime.LockOSThread()
	if len(args) != 2 || args[0] != "--spec" {
		fmt.Fprintln(os.Stderr, "usage: muster-procnode shim --spec FILE")
		os.Exit(2)
	}
	spec, err := readSpec(args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "procnode shim: reading spec: %v\n", err)
		os.Exit(ExitSetupFailed)
	}
	// Opened now: after the mounts its path may show something else.
	var errFile *os.File
	if spec.ErrorFile != "" {
		errFile, _ = os.OpenFile(spec.ErrorFile, os.O_WRONLY|os.O_TRUNC, 0)
	}
	err = run(spec)
	code := ExitSetupFailed
	var se *startError
	if errors.As(err, &se) {
		code = se.code
	}
	fmt.Fprintf(os.Stderr, "%v\n", err)
	if errFile != nil {
		_, _ = errFile.WriteString(err.Error())
	}
	os.Exit(code)
}

// run prepares the container's view of the system and execs its command.
// It only returns on failure.
func run(s *Spec) error {
	if len(s.Argv) == 0 {
		if s.Rootfs != "" {
			return fail(ExitNotFound, "no command given: the image has no entrypoint or cmd and the pod sets no command")
		}
		return fail(ExitNotFound, "no command given: the image is not in the node's registry mirror, so its entrypoint is unknown; set command in the pod spec")
	}
	if err := cgroup.Join(s.Cgroups); err != nil {
		return fail(ExitSetupFailed, "%v", err)
	}
	if err := isolate(s); err != nil {
		return err
	}
	var fm *fsMaker
	var err error
	if s.Rootfs != "" {
		fm, err = enterImageRoot(s)
	} else {
		fm, err = mountVolumes(s)
	}
	if err != nil {
		return err
	}
	if s.Hostname != "" {
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			return fail(ExitSetupFailed, "setting hostname: %v", err)
		}
	}
	if err := enterWorkingDir(fm, s.WorkingDir); err != nil {
		return err
	}
	// Last among the mounts: every mount point, the working directory
	// included, had to be made in the writable layer first.
	if s.Rootfs != "" && s.ReadOnlyRootfs {
		if err := makeRootReadOnly(); err != nil {
			return fail(ExitSetupFailed, "making / read-only: %v", err)
		}
	}
	return execCommand(s)
}

// isolate joins the pod's network namespace and detaches this mount
// namespace from the host's.
func isolate(s *Spec) error {
	if s.NetNS != "" {
		if err := joinNetNS(s.NetNS); err != nil {
			return fail(ExitSetupFailed, "joining pod network namespace: %v", err)
		}
	}
	// The clone gave us a copy of the host's mounts; keep our changes private.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(ExitSetupFailed, "making mounts private: %v", err)
	}
	// Copies of network-namespace handles (/run/netns/*) would keep other
	// pods' namespaces alive for as long as this container runs.
	detachNamespaceMounts()
	return nil
}

// mountVolumes bind-mounts the spec's mounts and the private /tmp. The
// returned fsMaker knows which directories are safe to create paths in.
func mountVolumes(s *Spec) (*fsMaker, error) {
	// Resolve every host path before the first mount changes the view:
	// a source under /tmp must be the host's, not the private /tmp.
	scratch, err := pinPath(s.ScratchDir)
	if err != nil {
		return nil, fail(ExitSetupFailed, "scratch dir: %v", err)
	}
	fm := &fsMaker{scratch: scratch, owned: map[string]bool{}}
	mounts, err := pinMountSources(s)
	if err != nil {
		return nil, err
	}
	return fm, bindAll(fm, mounts)
}

// bindAll mounts each source at its target, in order.
func bindAll(fm *fsMaker, mounts []Mount) error {
	for _, m := range mounts {
		if err := fm.bind(m); err != nil {
			if m.Optional {
				fmt.Fprintf(os.Stderr, "procnode shim: skipping %s: %v\n", m.Target, err)
				continue
			}
			return fail(ExitSetupFailed, "mounting %s at %s: %v", m.Source, m.Target, err)
		}
		if m.Target == "/tmp" {
			fm.owned["/tmp"] = true // our own directory: safe to create mount points in
		}
	}
	return nil
}

// enterWorkingDir creates the working directory if the view lacks it and
// changes into it.
func enterWorkingDir(fm *fsMaker, wd string) error {
	if wd == "" {
		wd = "/"
	}
	if err := fm.ensure(wd, true); err != nil {
		return fail(ExitSetupFailed, "preparing workingDir %s: %v", wd, err)
	}
	if err := os.Chdir(wd); err != nil {
		return fail(ExitSetupFailed, "chdir %s: %v", wd, err)
	}
	return nil
}

// pinMountSources returns the mounts to make (the spec's and the private
// /tmp) with their sources pinned, ordered parents before children so a
// nested mount lands on top. An optional mount whose source cannot be
// opened is left unpinned.
func pinMountSources(s *Spec) ([]Mount, error) {
	mounts := append([]Mount(nil), s.Mounts...)
	if s.TmpDir != "" {
		mounts = append(mounts, Mount{Source: s.TmpDir, Target: "/tmp"})
	}
	for i := range mounts {
		p, err := pinPath(mounts[i].Source)
		if err != nil {
			if mounts[i].Optional {
				continue
			}
			return nil, fail(ExitSetupFailed, "volume source %s: %v", mounts[i].Source, err)
		}
		mounts[i].Source = p
	}
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].Target) < depth(mounts[j].Target) })
	return mounts, nil
}

// execCommand resolves the command in the container's PATH, switches to the
// container's user and replaces this process with the command.
func execCommand(s *Spec) error {
	// In an image's root, the image's PATH and files: the host's are gone.
	path, err := resolveCommand(s.Argv[0], envValue(s.Env, "PATH"))
	if err != nil {
		return err
	}
	// Last: the set-up above needs the capabilities this takes away.
	if err := dropCapabilities(s); err != nil {
		return fail(ExitSetupFailed, "dropping capabilities: %v", err)
	}
	if err := setCredentials(s); err != nil {
		return fail(ExitSetupFailed, "setting user: %v", err)
	}
	err = syscall.Exec(path, s.Argv, s.Env)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOEXEC) {
		return fail(ExitNotExecutable, "exec: %q: %v", s.Argv[0], err)
	}
	return fail(ExitNotFound, "exec: %q: %v", s.Argv[0], err)
}

// pinPath opens path (O_PATH, kept open until exec, which closes it) and
// returns a /proc/self/fd name for it that keeps pointing at the same
// directory or file whatever is mounted later.
func pinPath(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("/proc/self/fd/%d", fd), nil
}

func joinNetNS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

func setCredentials(s *Spec) error {
	if s.GID != nil {
		groups := make([]int, len(s.Groups))
		for i, g := range s.Groups {
			groups[i] = int(g)
		}
		if err := syscall.Setgroups(groups); err != nil {
			return err
		}
		if err := syscall.Setgid(int(*s.GID)); err != nil {
			return err
		}
	}
	if s.UID != nil {
		return syscall.Setuid(int(*s.UID))
	}
	return nil
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// resolveCommand finds the executable like execvp would, using the
// container's PATH rather than the node's.
func resolveCommand(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err == nil {
			return name, nil
		}
		return "", fail(ExitNotFound, "exec: %q: no such file or directory", name)
	}
	sawNonExec := false
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		if st.Mode()&0o111 != 0 {
			return p, nil
		}
		sawNonExec = true
	}
	if sawNonExec {
		return "", fail(ExitNotExecutable, "exec: %q: permission denied", name)
	}
	return "", fail(ExitNotFound, "exec: %q: executable file not found in $PATH", name)
}
