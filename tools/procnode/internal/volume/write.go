package volume

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFiles makes dir hold exactly files. Changed files are replaced by
// rename so a reader never sees a half-written token or config file, and
// files no longer listed are removed. dir must be owned by the node.
func WriteFiles(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range files {
		rel := filepath.Clean(f.Path)
		if filepath.IsAbs(rel) || hasDotDot(rel) {
			return fmt.Errorf("invalid file path %q", f.Path)
		}
		keep[rel] = true
		p := filepath.Join(dir, rel)
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, f.Data) {
			if err := os.Chmod(p, f.Mode); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := filepath.Join(filepath.Dir(p), ".tmp-"+filepath.Base(p))
		if err := os.WriteFile(tmp, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(tmp, f.Mode); err != nil { // WriteFile honours umask
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !keep[rel] {
			return os.Remove(p)
		}
		return nil
	})
}
