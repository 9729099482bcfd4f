package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	v1alpha1 "github.com/muster-dev/muster/api/v1alpha1"
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
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

// JobManifest is one TrainingJob of a manifest, and where it was: the
// file and the document's number in it.
type JobManifest struct {
	Source string
	Job    *musterv1.TrainingJob
}

// ReadJobs decodes every document of every -f (as VisitManifests opens
// them), strictly: a misspelt field is an error naming it, not a field
// silently dropped. Another kind than TrainingJob is an error too. A job
// written for v1alpha1 is converted to v1beta1 as the cluster converts it.
func ReadJobs(filenames []string, recursive bool, in io.Reader) ([]JobManifest, error) {
	decoder := serializer.NewCodecFactory(Scheme, serializer.EnableStrict).UniversalDeserializer()
	var docs []JobManifest
	var errs []error
	err := VisitManifests(filenames, recursive, in, func(source string, r io.Reader) error {
		y := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
		for i := 1; ; i++ {
			var raw runtime.RawExtension
			if err := y.Decode(&raw); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", source, err)
			}
			raw.Raw = bytes.TrimSpace(raw.Raw)
			if len(raw.Raw) == 0 || string(raw.Raw) == "null" {
				continue
			}
			where := fmt.Sprintf("%s (document %d)", source, i)
			obj, gvk, err := decoder.Decode(raw.Raw, nil, nil)
			if err != nil && gvk != nil && gvk.Kind != "" && gvk.Kind != "TrainingJob" {
				errs = append(errs, fmt.Errorf("%s: a %s, not a TrainingJob: use kubectl for other objects", where, gvk.Kind))
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			if old, ok := obj.(*v1alpha1.TrainingJob); ok {
				job := &musterv1.TrainingJob{}
				if err := old.ConvertTo(job); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where, err))
					continue
				}
				job.APIVersion, job.Kind = musterv1.GroupVersion.String(), "TrainingJob"
				obj = job
			}
			job, ok := obj.(*musterv1.TrainingJob)
			if !ok {
				errs = append(errs, fmt.Errorf("%s: a %s, not a TrainingJob: use kubectl for other objects", where, gvk.Kind))
				continue
			}
			docs = append(docs, JobManifest{Source: where, Job: job})
		}
	})
	if err != nil {
		return nil, err
	}
	return docs, errors.Join(errs...)
}
