package webhook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Every job `muster import` writes in its golden files passes the
// webhook's defaulter and validator, with every gang backend driven: an
// imported job is one that can be created.
func TestImportedJobsAreAdmitted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "importer", "testdata", "*", "*.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden outputs under internal/importer/testdata")
	}
	h := newTrainingJobWebhook()
	h.gangBackends = []musterv1.GangBackend{musterv1.GangNative, musterv1.GangCoscheduling, musterv1.GangVolcano}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(t, data) {
			job := &musterv1.TrainingJob{}
			if err := yaml.UnmarshalStrict(doc, job); err != nil {
				t.Errorf("%s (document %d): %v", f, i+1, err)
				continue
			}
			if err := h.Default(context.Background(), job); err != nil {
				t.Errorf("%s (document %d): defaulting: %v", f, i+1, err)
			}
			if _, err := h.ValidateCreate(context.Background(), job); err != nil {
				t.Errorf("%s (document %d): %v", f, i+1, err)
			}
		}
	}
}

func splitDocuments(t *testing.T, data []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}
