package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-dev/muster/internal/testutil"
)

// Every testdata/<format>/<name>.yaml converts to <name>.golden.yaml, with
// the report in <name>.report.golden. Regenerate them with
//
//	go test ./internal/importer/ -update
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.yaml") {
			continue
		}
		n++
		base := strings.TrimSuffix(in, ".yaml")
		t.Run(strings.TrimPrefix(base, "testdata"+string(filepath.Separator)), func(t *testing.T) {
			results := convertFile(t, in)
			var out, report bytes.Buffer
			if err := WriteYAML(&out, results); err != nil {
				t.Fatal(err)
			}
			if err := WriteReport(&report, results); err != nil {
				t.Fatal(err)
			}
			golden(t, base+".golden.yaml", out.String())
			golden(t, base+".report.golden", report.String())
		})
	}
	if n == 0 {
		t.Fatal("no inputs under testdata")
	}
}

func convertFile(t *testing.T, name string) []Result {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	docs, err := Parse(filepath.ToSlash(name), f)
	if err != nil {
		t.Fatal(err)
	}
	results, err := Convert(docs)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	testutil.Golden(t, path, got)
}
