package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/muster-dev/muster/tools/image"
)

// Helm's OCI media types (helm push, helm pull oci://).
const (
	helmConfigMediaType = types.MediaType("application/vnd.cncf.helm.config.v1+json")
	helmChartMediaType  = types.MediaType("application/vnd.cncf.helm.chart.content.v1.tar+gzip")
)

// ChartValues are what a release sets in the chart.
type ChartValues struct {
	// Version is the release (v0.2.0): the chart's version is 0.2.0, its
	// appVersion v0.2.0.
	Version string
	// Repository and Digest are the operator image's.
	Repository, Digest string
}

// The lines of Chart.yaml and values.yaml a release rewrites. They are
// matched whole, so a chart whose layout changed fails the release rather
// than ship the image it was written with.
var (
	chartVersionLine    = regexp.MustCompile(`(?m)^version: .*$`)
	chartAppVersionLine = regexp.MustCompile(`(?m)^appVersion: .*$`)
	imageRepositoryLine = regexp.MustCompile(`(?m)^  repository: .*$`)
	imageDigestLine     = regexp.MustCompile(`(?m)^  digest: .*$`)
)

// PackageChart packages the chart in dir as `helm package` would (a gzip
// tar of the chart's files under its name), with the release's version and
// the image by digest in its values. Every entry has time t, so the same
// commit packages the same bytes.
func PackageChart(dir string, v ChartValues, t time.Time) ([]byte, error) {
	chartVersion := strings.TrimPrefix(v.Version, "v")
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	rewrite := func(file string, re *regexp.Regexp, line string) error {
		b, ok := files[file]
		if !ok || len(re.FindAll(b, -1)) != 1 {
			return fmt.Errorf("chart: %s must have exactly one line matching %s", file, re)
		}
		files[file] = re.ReplaceAll(b, []byte(line))
		return nil
	}
	for _, r := range []struct {
		file string
		re   *regexp.Regexp
		line string
	}{
		{"Chart.yaml", chartVersionLine, "version: " + chartVersion},
		{"Chart.yaml", chartAppVersionLine, "appVersion: " + v.Version},
		{"values.yaml", imageRepositoryLine, "  repository: " + v.Repository},
		{"values.yaml", imageDigestLine, `  digest: "` + v.Digest + `"`},
	} {
		if err := rewrite(r.file, r.re, r.line); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, n := range names {
		h := &tar.Header{Name: "muster/" + n, Mode: 0o644, Size: int64(len(files[n])), ModTime: t.UTC(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// chartMetadata reads Chart.yaml from a packaged chart, as JSON: Helm's
// OCI config is the chart's metadata.
func chartMetadata(chart []byte) ([]byte, string, error) {
	gz, err := gzip.NewReader(bytes.NewReader(chart))
	if err != nil {
		return nil, "", err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, "", fmt.Errorf("chart: no muster/Chart.yaml: %w", err)
		}
		if h.Name != "muster/Chart.yaml" {
			continue
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(tr); err != nil {
			return nil, "", err
		}
		var meta struct {
			Version string `json:"version"`
		}
		if err := yaml.Unmarshal(buf.Bytes(), &meta); err != nil {
			return nil, "", err
		}
		js, err := yaml.YAMLToJSON(buf.Bytes())
		return js, meta.Version, err
	}
}

// PushChart pushes a packaged chart to repo as Helm does (`helm push
// muster-X.tgz oci://repo`), and returns its reference, which `helm install
// muster oci://<repo>/muster --version X` installs.
func PushChart(repo string, chart []byte, opts ...remote.Option) (string, error) {
	meta, version, err := chartMetadata(chart)
	if err != nil {
		return "", err
	}
	ref, err := ChartRef(repo, version)
	if err != nil {
		return "", err
	}
	img, err := image.Artifact{
		Config: meta, ConfigMediaType: helmConfigMediaType,
		Blob: chart, BlobMediaType: helmChartMediaType,
	}.Image()
	if err != nil {
		return "", err
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		return "", fmt.Errorf("pushing the chart to %s: %w", ref, err)
	}
	return ref.String(), nil
}
