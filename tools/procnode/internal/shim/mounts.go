package shim

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fsMaker creates mount points without touching the host's filesystem. When
// a mount target does not exist, its nearest existing ancestor is "shadowed":
// a tmpfs that mirrors the ancestor's entries through bind mounts is moved on
// top of it, and the missing path is created inside that tmpfs. The host
// never sees the new directories, and they vanish with the container.
//
// In an image's root (rootDev set) no shadow is needed on the root's own
// file system, the container's writable layer: mount points are created
// there directly. Shadows elsewhere (a missing mount point inside a
// volume) are made in place (inPlace), as the new root has no scratch
// directory.
type fsMaker struct {
	scratch string
	n       int
	owned   map[string]bool // directories we created or shadowed (safe to write)
	inPlace bool
	rootDev uint64 // device of an image root's overlay; 0 in the host's root
}

// onRoot reports whether dir is on an image root's writable layer.
func (m *fsMaker) onRoot(dir string) bool {
	var st unix.Stat_t
	return m.rootDev != 0 && unix.Stat(dir, &st) == nil && st.Dev == m.rootDev
}

func (m *fsMaker) bind(mt Mount) error {
	st, err := os.Stat(mt.Source)
	if err != nil {
		return err
	}
	if err := m.ensure(mt.Target, st.IsDir()); err != nil {
		return err
	}
	if mt.tree > 0 {
		// A detached copy of the source (an image's root): attach it.
		if err := unix.MoveMount(mt.tree, "", unix.AT_FDCWD, mt.Target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return err
		}
	} else if err := unix.Mount(mt.Source, mt.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	if !mt.ReadOnly {
		return nil
	}
	// A read-only bind needs a remount.
	return remount(mt.Target, unix.MS_RDONLY)
}

// remount adds flags to the mount at target, keeping the flags it had.
func remount(target string, flags uintptr) error {
	var sfs unix.Statfs_t
	var had int64
	if unix.Statfs(target, &sfs) == nil {
		had = sfs.Flags
	}
	return unix.Mount("", target, "", remountFlags(had, flags), "")
}

// remountFlags are the flags of a bind remount that adds flags to a mount
// whose statfs flags are had. Such a remount sets every flag of the mount
// to what it is given, so the ones it had are given again.
func remountFlags(had int64, flags uintptr) uintptr {
	flags |= unix.MS_BIND | unix.MS_REMOUNT
	for _, f := range []struct{ st, ms int }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if had&int64(f.st) != 0 {
			flags |= uintptr(f.ms)
		}
	}
	return flags
}

// ensure makes path exist as a directory (dir) or a file.
func (m *fsMaker) ensure(path string, dir bool) error {
	path = filepath.Clean(path)
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() != dir {
			return fmt.Errorf("%s exists but is a %s", path, kind(st.IsDir()))
		}
		return nil
	}
	anc := path
	for {
		anc = filepath.Dir(anc)
		if _, err := os.Stat(anc); err == nil {
			break
		}
	}
	rest, err := filepath.Rel(anc, path)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(anc)
	if err != nil {
		return err
	}
	if !m.owned[real] && !m.onRoot(real) {
		if err := m.shadow(real); err != nil {
			return fmt.Errorf("shadowing %s: %w", real, err)
		}
	}
	// Every component below real is new, hence inside our tmpfs.
	parts := strings.Split(rest, string(filepath.Separator))
	cur := real
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		last := i == len(parts)-1
		if last && !dir {
			f, err := os.OpenFile(cur, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if err := os.Mkdir(cur, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
		m.owned[cur] = true
	}
	return nil
}

func kind(isDir bool) string {
	if isDir {
		return "directory"
	}
	return "file"
}

// shadowFlags are the mount flags of a shadow tmpfs: writable by the
// container, so nodev as its root is (rootFlags). The entries it mirrors
// are mounts of their own, with their own flags.
const shadowFlags = unix.MS_NODEV

// shadow replaces dir, in this mount namespace only, with a writable tmpfs
// that shows the same entries.
func (m *fsMaker) shadow(dir string) error {
	if m.inPlace {
		return m.shadowInPlace(dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	s := filepath.Join(m.scratch, fmt.Sprintf("shadow%d", m.n))
	m.n++
	if err := os.MkdirAll(s, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", s, "tmpfs", shadowFlags, "mode=0755"); err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		_ = os.Chown(s, int(sys.Uid), int(sys.Gid))
	}
	_ = os.Chmod(s, st.Mode().Perm()|st.Mode()&os.ModeSticky)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := mirrorEntry(filepath.Join(dir, e.Name()), filepath.Join(s, e.Name())); err != nil {
			return err
		}
	}
	if err := moveOnto(s, dir); err != nil {
		return err
	}
	m.owned[dir] = true
	return nil
}

// shadowInPlace is shadow without a scratch directory: the tmpfs is
// mounted on dir itself, and dir's entries are reached through a
// descriptor opened before they were covered.
func (m *fsMaker) shadowInPlace(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", shadowFlags, "mode=0755"); err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		_ = os.Chown(dir, int(sys.Uid), int(sys.Gid))
	}
	_ = os.Chmod(dir, st.Mode().Perm()|st.Mode()&os.ModeSticky)
	covered := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	for _, e := range entries {
		if err := mirrorEntry(filepath.Join(covered, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	m.owned[dir] = true
	return nil
}

// mirrorEntry makes dst, in the shadow tmpfs, show src: a copy of a
// symlink, or a bind mount of a directory or file.
func mirrorEntry(src, dst string) error {
	lst, err := os.Lstat(src)
	if err != nil {
		return nil // vanished meanwhile
	}
	switch {
	case lst.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case lst.IsDir():
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		return unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, "")
	default:
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_ = f.Close() // an empty placeholder: only its existence (as a mount point) matters
		return unix.Mount(src, dst, "", unix.MS_BIND, "")
	}
}

// moveOnto moves the shadow tmpfs s on top of dir.
func moveOnto(s, dir string) error {
	if dir != "/" {
		return unix.Mount(s, dir, "", unix.MS_MOVE, "")
	}
	// Mounting over "/" does not change our root; enter the new mount
	// through the working directory and make it the root (as switch_root does).
	if err := os.Chdir(s); err != nil {
		return err
	}
	if err := unix.Mount(s, "/", "", unix.MS_MOVE, ""); err != nil {
		return err
	}
	if err := unix.Chroot("."); err != nil {
		return err
	}
	return os.Chdir("/")
}

// detachNamespaceMounts lazily unmounts every nsfs mount in this mount
// namespace.
func detachNamespaceMounts() {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var targets []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields: id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "nsfs" && len(fields) > 4 {
				targets = append(targets, unescapeMountPath(fields[4]))
			}
		}
	}
	_ = f.Close()
	for i := len(targets) - 1; i >= 0; i-- {
		_ = unix.Unmount(targets[i], unix.MNT_DETACH)
	}
}

// unescapeMountPath decodes the octal escapes (\040 for space…) of mountinfo.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
