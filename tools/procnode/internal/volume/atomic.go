package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The layout of an API-backed volume, as the kubelet writes it, so that a
// reader never sees a mix of old and new files and a watcher can follow
// the ..data link:
//
//	DIR/..2026_01_02_15_04_05.123456/   the files of one version
//	DIR/..data -> ..2026_01_02_15_04_05.123456
//	DIR/<top-level name> -> ..data/<top-level name>
//
// A new version is written to a new directory and published by renaming a
// fresh link over ..data, which replaces it in one step.
const (
	dataLink    = "..data"
	newDataLink = "..data_tmp"
)

// WriteAtomic makes dir hold exactly files, publishing them all at once (see
// above). Names starting with ".." are the writer's own. Nothing changes
// when dir already holds files. dir must be owned by the node; files left
// there in an older flat layout are replaced.
func WriteAtomic(dir string, files []File) error {
	top, err := checkPayload(files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	current, _ := os.Readlink(filepath.Join(dir, dataLink))
	if current == "" || !sameFiles(filepath.Join(dir, current), files) {
		if err := publish(dir, files); err != nil {
			return err
		}
	}
	if err := linkTopLevel(dir, top); err != nil {
		return err
	}
	return removeStale(dir, top)
}

// checkPayload rejects paths that leave dir or use the writer's names, and
// returns the top-level names the files are under.
func checkPayload(files []File) (map[string]bool, error) {
	top := map[string]bool{}
	for _, f := range files {
		rel := filepath.Clean(f.Path)
		if filepath.IsAbs(rel) || hasDotDot(rel) || rel == "." {
			return nil, fmt.Errorf("invalid file path %q", f.Path)
		}
		first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if strings.HasPrefix(first, "..") {
			return nil, fmt.Errorf("invalid file path %q: names starting with '..' are reserved", f.Path)
		}
		top[first] = true
	}
	return top, nil
}

// sameFiles reports whether version directory v holds exactly files, with
// their data and modes.
func sameFiles(v string, files []File) bool {
	want := map[string]File{}
	for _, f := range files {
		want[filepath.Clean(f.Path)] = f
	}
	n := 0
	err := filepath.WalkDir(v, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(v, p)
		f, ok := want[rel]
		if !ok {
			return errDiffers
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != f.Mode.Perm() {
			return errDiffers
		}
		if data, err := os.ReadFile(p); err != nil || !bytes.Equal(data, f.Data) {
			return errDiffers
		}
		n++
		return nil
	})
	return err == nil && n == len(want)
}

var errDiffers = errors.New("differs")

// publish writes files to a new version directory and points ..data at it,
// then removes the version it replaced.
func publish(dir string, files []File) error {
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	v, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	if err := writeVersion(v, files); err != nil {
		_ = os.RemoveAll(v)
		return err
	}
	tmp := filepath.Join(dir, newDataLink)
	_ = os.Remove(tmp) // left by an interrupted write
	if err := os.Symlink(filepath.Base(v), tmp); err != nil {
		_ = os.RemoveAll(v)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		_ = os.Remove(tmp)
		_ = os.RemoveAll(v)
		return err
	}
	if old != "" && old != filepath.Base(v) {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// writeVersion fills a version directory, readable by any container user.
func writeVersion(v string, files []File) error {
	if err := os.Chmod(v, 0o755); err != nil { // MkdirTemp makes it 0700
		return err
	}
	for _, f := range files {
		p := filepath.Join(v, filepath.Clean(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.Mode); err != nil { // WriteFile honours umask
			return err
		}
	}
	return nil
}

// linkTopLevel makes each top-level name a link into ..data, replacing
// whatever else is there (a file of the older flat layout).
func linkTopLevel(dir string, top map[string]bool) error {
	for name := range top {
		p := filepath.Join(dir, name)
		target := filepath.Join(dataLink, name)
		if got, err := os.Readlink(p); err == nil && got == target {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if err := os.Symlink(target, p); err != nil {
			return err
		}
	}
	return nil
}

// removeStale removes every entry of dir that is neither a top-level name
// of the current files, ..data nor the version it points at.
func removeStale(dir string, top map[string]bool) error {
	current, _ := os.Readlink(filepath.Join(dir, dataLink))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if top[name] || name == dataLink || name == current {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
