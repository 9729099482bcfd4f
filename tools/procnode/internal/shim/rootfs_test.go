package shim

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// No device node on a container's root opens a device: not one an image's
// layers carry, not one the container makes. Its devices are those of its
// own /dev.
func TestTheRootIsMountedNodev(t *testing.T) {
	flags, opts := overlayMount("/l", "/u", "/w")
	if flags&unix.MS_NODEV == 0 {
		t.Errorf("overlay flags %#x: no MS_NODEV", flags)
	}
	if want := "lowerdir=/l,upperdir=/u,workdir=/w"; opts != want {
		t.Errorf("overlay options %q, want %q", opts, want)
	}
	// A bind remount sets every flag of the mount: nodev must be restated.
	if readOnlyRootFlags&unix.MS_NODEV == 0 || readOnlyRootFlags&unix.MS_RDONLY == 0 {
		t.Errorf("read-only root flags %#x: want MS_RDONLY and MS_NODEV", readOnlyRootFlags)
	}
}

// A bind remount keeps the flags the mount had and adds the ones asked for.
func TestRemountKeepsTheFlagsTheMountHad(t *testing.T) {
	got := remountFlags(unix.ST_NOSUID|unix.ST_NOEXEC, unix.MS_NODEV)
	for _, f := range []uintptr{unix.MS_BIND, unix.MS_REMOUNT, unix.MS_NOSUID, unix.MS_NOEXEC, unix.MS_NODEV} {
		if got&f == 0 {
			t.Errorf("remount flags %#x lack %#x", got, f)
		}
	}
	if got&unix.MS_RDONLY != 0 {
		t.Errorf("remount flags %#x: read-only, which neither the mount nor the caller asked for", got)
	}
}

// The same with the kernel: the overlay is nodev, and stays so once made
// read-only (readOnlyRootFilesystem).
func TestTheMountedRootIsNodevAlsoReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir := t.TempDir()
	s := &Spec{Rootfs: filepath.Join(dir, "image"), RootfsRW: filepath.Join(dir, "rw")}
	root := filepath.Join(dir, "root")
	for _, d := range []string{s.Rootfs, filepath.Join(s.RootfsRW, "upper"), filepath.Join(s.RootfsRW, "work"), root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := mountOverlay(s, root); err != nil {
		t.Skipf("no overlayfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	flags := func() int64 {
		var st unix.Statfs_t
		if err := unix.Statfs(root, &st); err != nil {
			t.Fatal(err)
		}
		return st.Flags
	}
	if flags()&unix.ST_NODEV == 0 {
		t.Errorf("the overlay is not nodev: statfs flags %#x", flags())
	}
	if err := remount(root, readOnlyRootFlags); err != nil {
		t.Fatal(err)
	}
	if f := flags(); f&unix.ST_NODEV == 0 || f&unix.ST_RDONLY == 0 {
		t.Errorf("read-only, the root lost nodev: statfs flags %#x", f)
	}
}
