package netsetup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// inThread runs fn on a fresh, locked OS thread. If fn reports that the
// thread could not be restored to the root network namespace, the thread is
// left locked so the Go runtime destroys it instead of reusing it.
func inThread(fn func() (restored bool, err error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := fn()
		if restored {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// InNetNS runs fn with the calling thread inside the network namespace at
// path. Sockets created by fn stay in that namespace after the switch back.
func InNetNS(path string, fn func() error) error {
	return inThread(func() (bool, error) {
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			return true, err
		}
		defer func() { _ = orig.Close() }()
		target, err := os.Open(path)
		if err != nil {
			return true, err
		}
		defer func() { _ = target.Close() }()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			return true, fmt.Errorf("setns %s: %w", path, err)
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			return false, errors.Join(ferr, fmt.Errorf("restoring network namespace: %w", err))
		}
		return true, ferr
	})
}

// createNamed creates a network namespace and pins it at NetnsDir/name.
func createNamed(name string) (string, error) {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(NetnsDir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return "", err
	}
	_ = f.Close() // an empty read-only file: only its existence (as a mount point) matters
	err = inThread(func() (bool, error) {
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		orig, err := os.Open(self)
		if err != nil {
			return true, err
		}
		defer func() { _ = orig.Close() }()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return true, fmt.Errorf("unshare: %w", err)
		}
		merr := unix.Mount(self, path, "", unix.MS_BIND, "")
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			return false, errors.Join(merr, err)
		}
		return true, merr
	})
	if err != nil {
		_ = os.Remove(path)
		return "", err
	}
	return path, nil
}

// deleteNamed unpins a namespace; the kernel frees it once no process or
// socket uses it any more.
func deleteNamed(name string) error {
	path := filepath.Join(NetnsDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// Cleanup removes every namespace the node made (and with them their
// bridge and veths). It is safe to call when nothing exists.
func Cleanup(node string) ([]string, error) {
	entries, err := os.ReadDir(NetnsDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !Owned(node, e.Name()) {
			continue
		}
		if err := deleteNamed(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}
