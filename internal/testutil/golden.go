package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is the -update flag of every test binary that compares with
// golden files: it rewrites them with what the tests get.
var update = flag.Bool("update", false, "rewrite the golden files with the output the tests get")

// Golden compares got with the file at path, or writes it there with
// -update.
func Golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test with -update to write it", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got), run go test with -update if the change is meant:\n%s", path, diff)
	}
}
