package importer

import (
	"io"

	"sigs.k8s.io/yaml"
)

// WriteYAML writes the results' jobs as one YAML stream, a document each.
func WriteYAML(w io.Writer, results []Result) error {
	for i, r := range results {
		b, err := yaml.Marshal(r.Job)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
