package image

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// tree is a directory treated as the root of a file system: every path is
// resolved inside it, with ".." and absolute symlinks staying inside (as
// they would once the directory is a container's "/"). An image's layers
// may hold symlinks such as "var/run -> /run"; followed as host paths,
// they would let a layer write anywhere on the node.
type tree struct {
	fd int // O_PATH descriptor of the root directory
}

func openTree(dir string) (*tree, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return &tree{fd: fd}, nil
}

func (t *tree) close() { _ = unix.Close(t.fd) }

// open resolves rel (relative, slash-separated; "" is the root) inside the
// tree, following symlinks within it.
func (t *tree) open(rel string, flags uint64) (int, error) {
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(t.fd, rel, &unix.OpenHow{
		Flags:   flags | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// openDir opens the directory rel, creating it and its missing parents
// (mode 0755, owned by root) as tar archives may leave them implicit.
func (t *tree) openDir(rel string) (int, error) {
	fd, err := t.open(rel, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil || !errors.Is(err, unix.ENOENT) || rel == "" {
		return fd, err
	}
	parent, base := splitRel(rel)
	pfd, err := t.openDir(parent)
	if err != nil {
		return -1, err
	}
	err = unix.Mkdirat(pfd, base, 0o755)
	_ = unix.Close(pfd)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, &os.PathError{Op: "mkdir", Path: rel, Err: err}
	}
	// A dangling symlink in the way fails here rather than being created
	// through.
	return t.open(rel, unix.O_PATH|unix.O_DIRECTORY)
}

// openParent opens the directory that holds rel and returns it with rel's
// last element; rel itself is not followed.
func (t *tree) openParent(rel string, create bool) (int, string, error) {
	parent, base := splitRel(rel)
	if create {
		fd, err := t.openDir(parent)
		return fd, base, err
	}
	fd, err := t.open(parent, unix.O_PATH|unix.O_DIRECTORY)
	return fd, base, err
}

// removeAll removes name in the directory dirfd, recursively, without
// following symlinks. A missing name is not an error.
func removeAll(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dirfd, name, 0)
	}
	if err := clearDir(dirfd, name, func(string) bool { return false }); err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// clearDir removes the entries of directory name (in dirfd) for which keep
// is false; keep gets each entry's name.
func clearDir(dirfd int, name string, keep func(string) bool) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer func() { _ = f.Close() }()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		if keep(n) {
			continue
		}
		if err := removeAll(fd, n); err != nil {
			return err
		}
	}
	return nil
}

// splitRel splits a clean relative path into its parent ("" for the root)
// and last element.
func splitRel(rel string) (string, string) {
	dir, base := path.Split(rel)
	return strings.TrimSuffix(dir, "/"), base
}

// cleanEntry turns a tar entry name into a clean path relative to the root
// ("" for the root itself). Names with a ".." element are refused, whatever
// they would clean to: an image has no business naming them.
func cleanEntry(name string) (string, error) {
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return "", fmt.Errorf("tar entry %q: refusing a path with \"..\"", name)
		}
	}
	p := path.Clean("/" + name)
	return strings.TrimPrefix(p, "/"), nil
}
