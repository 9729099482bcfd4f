package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// enterImageRoot makes an overlay of the image's root filesystem this
// mount namespace's "/" and mounts the container's volumes and files in
// it. Host paths vanish with the pivot, so every mount source is first
// cloned into a detached mount (open_tree) that is attached in the new
// root afterwards. The returned fsMaker creates mount points in the new
// root.
func enterImageRoot(s *Spec) (*fsMaker, error) {
	mounts, err := cloneMountSources(s)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(s.ScratchDir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fail(ExitSetupFailed, "root mount point: %v", err)
	}
	if err := mountOverlay(s, root); err != nil {
		return nil, fail(ExitSetupFailed, "mounting the image's root filesystem: %v", err)
	}
	if err := pivotInto(root); err != nil {
		return nil, fail(ExitSetupFailed, "entering the image's root filesystem: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		return nil, fail(ExitSetupFailed, "stat /: %v", err)
	}
	// Mount points are made in the container's own writable layer (also
	// with readOnlyRootFilesystem: "/" becomes read-only only once they
	// are all there); no shadow tmpfs needs scratch space in the new root.
	fm := &fsMaker{inPlace: true, rootDev: st.Dev, owned: map[string]bool{}}
	if err := mountSystem(fm); err != nil {
		return nil, err
	}
	if err := bindAll(fm, mounts); err != nil {
		return nil, err
	}
	// The private /tmp is the other file system the container may write
	// on that is the node's and not a volume of its own choosing.
	if s.TmpDir != "" {
		if err := remount("/tmp", unix.MS_NODEV); err != nil {
			return nil, fail(ExitSetupFailed, "making /tmp nodev: %v", err)
		}
	}
	return fm, nil
}

// cloneMountSources returns the mounts to make (the spec's and the private
// /tmp), each source a detached copy of the host path, ordered parents
// before children. Optional mounts whose source cannot be copied are
// dropped.
func cloneMountSources(s *Spec) ([]Mount, error) {
	var out []Mount
	mounts := append([]Mount(nil), s.Mounts...)
	if s.TmpDir != "" {
		mounts = append(mounts, Mount{Source: s.TmpDir, Target: "/tmp"})
	}
	for _, m := range mounts {
		fd, err := unix.OpenTree(unix.AT_FDCWD, m.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|uint(unix.AT_RECURSIVE))
		if err != nil {
			if m.Optional {
				continue
			}
			return nil, fail(ExitSetupFailed, "volume source %s: %v", m.Source, err)
		}
		m.Source = fmt.Sprintf("/proc/self/fd/%d", fd)
		m.tree = fd
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].Target) < depth(out[j].Target) })
	return out, nil
}

// mountOverlay mounts the image's tree (read-only, shared by every
// container of the image) under the attempt's writable layer at root. The
// directories are passed as /proc/self/fd names: overlayfs options cannot
// hold the commas or colons a state directory's path might.
func mountOverlay(s *Spec, root string) error {
	upper, work := filepath.Join(s.RootfsRW, "upper"), filepath.Join(s.RootfsRW, "work")
	var fds []string
	for _, d := range []string{s.Rootfs, upper, work} {
		p, err := pinPath(d)
		if err != nil {
			return err
		}
		fds = append(fds, p)
	}
	flags, opts := overlayMount(fds[0], fds[1], fds[2])
	return unix.Mount("overlay", root, "overlay", flags, opts)
}

// rootFlags are the mount flags of a container's root: nodev, so that no
// device node on it opens a device, neither one the image's layers carry
// (the unpacked cache keeps them) nor one the container makes. A runtime's
// device cgroup would refuse them; no such cgroup bounds a pod here, so the
// node would be the host's device. The container's devices are those of its
// own /dev (mountDev).
const rootFlags = unix.MS_NODEV

// readOnlyRootFlags are what makeRootReadOnly gives the root. The remount
// sets every flag of the mount: nodev is restated, whatever statfs says.
const readOnlyRootFlags = unix.MS_RDONLY | rootFlags

// overlayMount is the flags and the options of the overlay of lower under
// upper, with work as its work directory.
func overlayMount(lower, upper, work string) (uintptr, string) {
	return rootFlags, fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
}

// pivotInto makes root this mount namespace's "/" and detaches the host's
// root, so nothing of the host's file system stays reachable (a chroot
// could be left with a chdir(".."); pivot_root cannot). pivot_root(".",
// ".") stacks the old root on the new one, which needs no directory for it
// in the image.
func pivotInto(root string) error {
	if err := os.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	return os.Chdir("/")
}

// mountSystem mounts what a container runtime gives every container: a
// proc of its own, a read-only sysfs (of the pod's network namespace) and
// a /dev of its own (see mountDev).
func mountSystem(fm *fsMaker) error {
	const nosuid = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	for _, m := range []struct {
		target, fstype string
		flags          uintptr
	}{
		{"/proc", "proc", nosuid},
		{"/sys", "sysfs", nosuid | unix.MS_RDONLY},
	} {
		if err := fm.ensure(m.target, true); err != nil {
			return fail(ExitSetupFailed, "mount point %s: %v", m.target, err)
		}
		if err := unix.Mount(m.fstype, m.target, m.fstype, m.flags, ""); err != nil {
			return fail(ExitSetupFailed, "mounting %s: %v", m.target, err)
		}
	}
	if err := mountDev(fm); err != nil {
		return fail(ExitSetupFailed, "mounting /dev: %v", err)
	}
	return nil
}

// mountDev gives the container a tmpfs /dev with the devices a runtime
// creates (null, zero, full, random, urandom, tty), a private devpts and a
// /dev/shm. Binding the host's /dev instead would show the node's disks,
// and a file such as /dev/termination-log could only be made there by
// shadowing it; in a /dev of its own the node creates it directly.
func mountDev(fm *fsMaker) error {
	if err := fm.ensure("/dev", true); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_STRICTATIME, "mode=755,size=65536k"); err != nil {
		return err
	}
	fm.owned["/dev"] = true
	for _, d := range []struct {
		name         string
		major, minor uint32
	}{{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}} {
		p := "/dev/" + d.name
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(d.major, d.minor))); err != nil {
			return fmt.Errorf("mknod %s: %w", p, err)
		}
		// The umask must not take the "everyone" bits away.
		if err := os.Chmod(p, 0o666); err != nil {
			return err
		}
	}
	for link, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx", "core": "/proc/kcore",
	} {
		if err := os.Symlink(target, "/dev/"+link); err != nil {
			return err
		}
	}
	for _, d := range []string{"/dev/pts", "/dev/shm"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		fm.owned[d] = true
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("devpts: %w", err)
	}
	return unix.Mount("shm", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k")
}

// makeRootReadOnly remounts "/" read-only (readOnlyRootFilesystem); the
// mounts on it keep their own flags.
func makeRootReadOnly() error {
	return remount("/", readOnlyRootFlags)
}
