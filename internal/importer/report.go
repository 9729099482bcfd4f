package importer

import (
	"fmt"
	"io"
	"sort"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Dropped is a field of the source that the TrainingJob does not carry, or
// carries with a different behaviour, and why.
type Dropped struct {
	// Path is the field in the source document, e.g.
	// spec.taskRoles[1].task.pod.spec.hostname.
	Path string
	// Reason says why it is not carried over and, where there is one, what
	// to use instead.
	Reason string
}

// Result is one converted document.
type Result struct {
	// Source names the document: "<file> (document N)".
	Source string
	// Kind is the source's kind, e.g. Framework.
	Kind string
	// Job is the TrainingJob that behaves as the source did.
	Job *musterv1.TrainingJob
	// Dropped lists what the job does not carry, in path order.
	Dropped []Dropped
}

// WriteReport writes, for every result with dropped fields, its source and
// each field with its reason. Results with nothing dropped write nothing.
func WriteReport(w io.Writer, results []Result) error {
	for _, r := range results {
		if len(r.Dropped) == 0 {
			continue
		}
		noun := "fields"
		if len(r.Dropped) == 1 {
			noun = "field"
		}
		if _, err := fmt.Fprintf(w, "%s: %s %s: %d %s not carried over:\n", r.Source, r.Kind, r.Job.Name, len(r.Dropped), noun); err != nil {
			return err
		}
		for _, d := range r.Dropped {
			if _, err := fmt.Fprintf(w, "  %s: %s\n", d.Path, d.Reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// CountDropped is the number of dropped fields over all results.
func CountDropped(results []Result) int {
	n := 0
	for _, r := range results {
		n += len(r.Dropped)
	}
	return n
}

func sortDropped(ds []Dropped) []Dropped {
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Path < ds[j].Path })
	return ds
}
