package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// OCI whiteouts: ".wh.NAME" deletes NAME from the layers below; a directory
// holding ".wh..wh..opq" hides everything the layers below put in it.
const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
)

// applyLayer applies one layer, an uncompressed tar stream, on top of the
// tree: the layers of an image applied in order give its root filesystem.
func applyLayer(t *tree, r io.Reader) error {
	tr := tar.NewReader(r)
	// Paths this layer wrote, with their parents: its own whiteouts and
	// opaque markers only hide what the layers below put there, whatever
	// the order of the entries in the archive.
	mine := map[string]bool{"": true}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading layer: %w", err)
		}
		rel, err := cleanEntry(hdr.Name)
		if err != nil {
			return err
		}
		dir, base := splitRel(rel)
		switch {
		case base == opaqueMarker:
			err = opaque(t, dir, mine)
		case strings.HasPrefix(base, whiteoutPrefix):
			err = whiteout(t, path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)), mine)
		default:
			err = extract(t, rel, hdr, tr)
			for p := rel; ; p, _ = splitRel(p) {
				mine[p] = true
				if p == "" {
					break
				}
			}
		}
		if err != nil {
			return fmt.Errorf("tar entry %q: %w", hdr.Name, err)
		}
	}
}

// whiteout removes rel as left by the layers below.
func whiteout(t *tree, rel string, mine map[string]bool) error {
	if rel == "" || mine[rel] {
		return nil
	}
	pfd, base, err := t.openParent(rel, false)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // nothing below to hide
	}
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(pfd) }()
	return removeAll(pfd, base)
}

// opaque empties directory rel of what the layers below put in it, keeping
// what this layer wrote (recursively: a directory this layer wrote into
// loses the lower layers' entries too).
func opaque(t *tree, rel string, mine map[string]bool) error {
	pfd, base, err := t.openParent(rel, true)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(pfd) }()
	if base == "" {
		base = "."
	}
	return clearLower(pfd, base, rel, mine)
}

func clearLower(dirfd int, name, rel string, mine map[string]bool) error {
	var subdirs []string
	err := clearDir(dirfd, name, func(n string) bool {
		p := path.Join(rel, n)
		if mine[p] {
			subdirs = append(subdirs, n)
		}
		return mine[p]
	})
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	for _, n := range subdirs {
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if err := clearLower(fd, n, path.Join(rel, n), mine); err != nil {
				return err
			}
		}
	}
	return nil
}

// extract creates the entry at rel. The entry's own name is never
// followed: a symlink or file already there is replaced, a directory kept
// (and given the entry's owner and mode).
func extract(t *tree, rel string, hdr *tar.Header, r io.Reader) error {
	if rel == "" {
		if hdr.Typeflag != tar.TypeDir {
			return errors.New("the root must be a directory")
		}
		return setMeta(t.fd, ".", hdr)
	}
	pfd, base, err := t.openParent(rel, true)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(pfd) }()
	var st unix.Stat_t
	exists := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	if exists && (hdr.Typeflag != tar.TypeDir || st.Mode&unix.S_IFMT != unix.S_IFDIR) {
		if err := removeAll(pfd, base); err != nil {
			return err
		}
		exists = false
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if !exists {
			if err := unix.Mkdirat(pfd, base, 0o700); err != nil {
				return err
			}
		}
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA still appears in old layers
		if err := writeFile(pfd, base, r); err != nil {
			return err
		}
	case tar.TypeSymlink:
		// Stored as written: it is resolved in the container's root, never
		// followed here.
		if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
			return err
		}
	case tar.TypeLink:
		return hardlink(t, pfd, base, hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if err := mknod(pfd, base, hdr); err != nil {
			slog.Warn("image layer: skipping device node", "path", rel, "err", err)
			return nil
		}
	default:
		slog.Debug("image layer: skipping entry of unsupported type", "path", rel, "type", string(hdr.Typeflag))
		return nil
	}
	return setMeta(pfd, base, hdr)
}

func writeFile(dirfd int, name string, r io.Reader) error {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// hardlink links name (in dirfd) to the entry target names, which an
// earlier entry or layer made; the target is resolved in the tree, and a
// symlink target is linked itself, not followed.
func hardlink(t *tree, dirfd int, name, target string) error {
	rel, err := cleanEntry(target)
	if err != nil {
		return err
	}
	if rel == "" {
		return errors.New("hard link to the root")
	}
	tfd, tbase, err := t.openParent(rel, false)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", target, err)
	}
	defer func() { _ = unix.Close(tfd) }()
	if err := unix.Linkat(tfd, tbase, dirfd, name, 0); err != nil {
		return fmt.Errorf("hard link to %q: %w", target, err)
	}
	return nil
}

func mknod(dirfd int, name string, hdr *tar.Header) error {
	mode := uint32(unix.S_IFIFO)
	switch hdr.Typeflag {
	case tar.TypeChar:
		mode = unix.S_IFCHR
	case tar.TypeBlock:
		mode = unix.S_IFBLK
	}
	dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
	return unix.Mknodat(dirfd, name, mode|uint32(hdr.Mode&0o7777), int(dev))
}

// setMeta gives the entry its owner, mode (set after the owner: chown
// clears set-uid bits) and modification time. Symlinks only get an owner
// and time; their mode means nothing.
func setMeta(dirfd int, name string, hdr *tar.Header) error {
	if err := unix.Fchownat(dirfd, name, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	if hdr.Typeflag != tar.TypeSymlink {
		if err := unix.Fchmodat(dirfd, name, uint32(hdr.Mode&0o7777), 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	mtime := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	atime := mtime
	if !hdr.AccessTime.IsZero() {
		atime = unix.NsecToTimespec(hdr.AccessTime.UnixNano())
	}
	// Times are cosmetic; some file systems refuse them on symlinks.
	_ = unix.UtimesNanoAt(dirfd, name, []unix.Timespec{atime, mtime}, unix.AT_SYMLINK_NOFOLLOW)
	return nil
}
