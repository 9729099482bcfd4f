package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"
)

const testImage = "ghcr.io/muster-dev/muster-operator:v9.8.7@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// install.yaml installs everything config/production does, with the
// operator's image by digest and no other Muster image anywhere.
func TestInstallYAMLPinsTheImage(t *testing.T) {
	out, err := InstallYAML(repoRoot(t), testImage, "v9.8.7")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	var deployment map[string]any
	for _, doc := range splitDocs(out) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if obj == nil {
			continue
		}
		kinds[obj["kind"].(string)]++
		if obj["kind"] == "Deployment" {
			deployment = obj
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "ValidatingWebhookConfiguration", "Service", "Deployment"} {
		if kinds[k] == 0 {
			t.Errorf("install.yaml has no %s (it has %v)", k, kinds)
		}
	}
	if deployment == nil {
		t.Fatal("no Deployment")
	}
	b, _ := yaml.Marshal(deployment)
	if !strings.Contains(string(b), "image: "+testImage+"\n") || !strings.Contains(string(b), "app.kubernetes.io/version: v9.8.7") {
		t.Errorf("the Deployment does not run %s at v9.8.7:\n%s", testImage, b)
	}
	if n := strings.Count(string(out), "muster-operator:"); n != 1 {
		t.Errorf("install.yaml names a Muster image %d times, want once (the pinned one)", n)
	}
}

func untar(t *testing.T, tgz []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

// The packaged chart is the chart with the release's version and the
// image by digest, and the same commit packages the same bytes.
func TestPackageChart(t *testing.T) {
	when := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	v := ChartValues{Version: "v9.8.7", Repository: "registry.example/muster/muster-operator", Digest: "sha256:abcd"}
	dir := filepath.Join(repoRoot(t), "charts", "muster")
	a, err := PackageChart(dir, v, when)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PackageChart(dir, v, when)
	if !bytes.Equal(a, b) {
		t.Error("two packagings of the same chart differ")
	}
	files := untar(t, a)
	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal([]byte(files["muster/Chart.yaml"]), &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != "9.8.7" || chart.AppVersion != "v9.8.7" {
		t.Errorf("Chart.yaml version %q appVersion %q", chart.Version, chart.AppVersion)
	}
	var values struct {
		Image struct{ Repository, Tag, Digest string }
	}
	if err := yaml.Unmarshal([]byte(files["muster/values.yaml"]), &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != v.Repository || values.Image.Digest != v.Digest {
		t.Errorf("values image %+v", values.Image)
	}
	if _, ok := files["muster/templates/deployment.yaml"]; !ok {
		t.Errorf("the package lacks its templates: %d files", len(files))
	}
	crds, _ := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	for _, c := range crds {
		if _, ok := files["muster/crds/"+filepath.Base(c)]; !ok {
			t.Errorf("the package lacks %s", c)
		}
	}
}

// A pushed chart is what helm pull oci:// reads: Helm's media types, its
// metadata as the config, tagged with the chart version.
func TestPushChart(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	chart, err := PackageChart(filepath.Join(repoRoot(t), "charts", "muster"), ChartValues{Version: "v9.8.7", Repository: "r/muster-operator", Digest: "sha256:ab"}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := PushChart(host+"/charts", chart)
	if err != nil {
		t.Fatal(err)
	}
	if ref != host+"/charts/muster:9.8.7" {
		t.Errorf("pushed as %s", ref)
	}
	r, _ := name.ParseReference(ref, name.Insecure)
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := img.Manifest()
	if m.Config.MediaType != helmConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != helmChartMediaType {
		t.Fatalf("manifest %+v", m)
	}
	cfg, _ := img.RawConfigFile()
	if !strings.Contains(string(cfg), `"version":"9.8.7"`) || !strings.Contains(string(cfg), `"name":"muster"`) {
		t.Errorf("config %s", cfg)
	}
	layers, _ := img.Layers()
	rc, _ := layers[0].Compressed()
	got, _ := io.ReadAll(rc)
	if !bytes.Equal(got, chart) {
		t.Error("the pushed chart's bytes differ from the package")
	}
}

// SHA256SUMS is in sha256sum's format and covers every file but itself.
func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	for n, body := range map[string]string{"b.txt": "bee\n", "a.txt": "ay\n"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "image"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Checksums(dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	// sha256sum of "ay\n" and "bee\n"; the image folder is not a file.
	want := "515f97e456a05d05061517d9eade92bbb2df9cbf2cf75f28c204a67cafd3510f  a.txt\nc150e5a8a604acebd8d15bd7bf8ea96b2874bdcc91dee6319977d353251283b0  b.txt\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", got, want)
	}
}

// splitDocs splits a multi-document YAML stream.
func splitDocs(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}
