package cmdutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// VisitManifests opens each -f in turn: "-" is in (named stdin), a file
// is itself, a folder is its .yaml, .yml and .json files in name order,
// and its subfolders' too with recursive.
func VisitManifests(filenames []string, recursive bool, in io.Reader, fn func(source string, r io.Reader) error) error {
	for _, name := range filenames {
		if name == "-" {
			if err := fn("stdin", in); err != nil {
				return err
			}
			continue
		}
		files, err := expand(name, recursive)
		if err != nil {
			return err
		}
		for _, file := range files {
			if err := visitFile(file, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

func visitFile(name string, fn func(string, io.Reader) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return fn(name, f)
}

func expand(name string, recursive bool) ([]string, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", name, err)
	}
	if !info.IsDir() {
		return []string{name}, nil
	}
	var files []string
	err = filepath.WalkDir(name, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != name && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(path)) {
			files = append(files, path)
		}
		return nil
	})
	return files, err
}
