// Package release cuts a Muster release: the operator image (tools/image)
// as an OCI layout and as loadable tarballs, its SBOM, install.yaml (the
// CRD, RBAC, webhook and Deployment with the image by digest), the Helm
// chart packaged with that digest, the muster CLI for each platform,
// SHA256SUMS and release notes, all in one folder; and, when asked, pushes
// the image and the chart to a registry. `make release` runs it.
package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/mod/semver"

	"github.com/muster-dev/muster/tools/image"
)

// DefaultRegistry is where a release names its image and chart unless told
// otherwise: the name every manifest in the repository uses.
const DefaultRegistry = "ghcr.io/muster-dev"

// CLIPlatforms are the platforms the muster CLI is released for.
var CLIPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// Options say what to release.
type Options struct {
	// Root is the checkout; Out the folder the release is written to
	// (emptied first).
	Root, Out string
	// Version is the release, vMAJOR.MINOR.PATCH (a pre-release suffix is
	// allowed).
	Version string
	// Registry names the image (Registry/muster-operator) and the chart
	// (Registry/charts/muster); DefaultRegistry when empty.
	Registry string
	// Push pushes the image and the chart to Registry.
	Push bool
	// CLIPlatforms to build the CLI for; nil means CLIPlatforms, empty
	// (non-nil) builds none.
	CLIPlatforms []string
	// ImagePlatforms of the operator image; nil means image.Platforms.
	ImagePlatforms []v1.Platform
	// Remote options for pushing (authentication, transport).
	Remote []remote.Option
	Log    func(format string, args ...any)
}

// Manifest is what a release holds, written as release.json beside it.
type Manifest struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// Image is the operator image by tag and digest, as install.yaml and
	// the chart name it; Digest its index's digest.
	Image  string `json:"image"`
	Digest string `json:"digest"`
	// Chart is the chart's file; ChartRef its OCI reference when pushed.
	Chart    string `json:"chart"`
	ChartRef string `json:"chartRef,omitempty"`
	// Files are every file of the release with its SHA-256.
	Files map[string]string `json:"files"`
}

// Run cuts the release.
func Run(ctx context.Context, o Options) (*Manifest, error) {
	if !semver.IsValid(o.Version) || semver.Build(o.Version) != "" {
		return nil, fmt.Errorf("release: version %q is not vMAJOR.MINOR.PATCH", o.Version)
	}
	if o.Registry == "" {
		o.Registry = DefaultRegistry
	}
	o.Registry = strings.TrimSuffix(o.Registry, "/")
	if o.CLIPlatforms == nil {
		o.CLIPlatforms = CLIPlatforms
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	commit, when, err := Head(o.Root)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	work := filepath.Join(o.Out, ".work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()

	img, err := image.Build(ctx, image.Options{
		Root: o.Root, Version: o.Version, Commit: commit, Time: when,
		Platforms: o.ImagePlatforms, WorkDir: work, Log: o.Log,
	})
	if err != nil {
		return nil, err
	}
	m, err := writeImage(o, img, commit)
	if err != nil {
		return nil, err
	}
	chart, err := writeManifests(o, m, when)
	if err != nil {
		return nil, err
	}
	if err := buildCLIs(ctx, o, commit); err != nil {
		return nil, err
	}
	notes, err := Notes(o.Root, o.Version, m)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "RELEASE_NOTES.md"), notes, 0o644); err != nil {
		return nil, err
	}
	if o.Push {
		if err := push(o, img, chart, m); err != nil {
			return nil, err
		}
	}
	if m.Files, err = Checksums(o.Out); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(o.Out, "release.json"), append(b, '\n'), 0o644)
}

// repository is the operator image's repository in the release's registry.
func (o Options) repository() string { return o.Registry + "/muster-operator" }

// writeImage writes the image as an OCI layout, as tarballs and its SBOM,
// and starts the release's manifest.
func writeImage(o Options, img *image.Result, commit string) (*Manifest, error) {
	digest, err := img.Index.Digest()
	if err != nil {
		return nil, err
	}
	m := &Manifest{Version: o.Version, Commit: commit, Digest: digest.String(), Image: o.repository() + ":" + o.Version + "@" + digest.String()}
	o.Log("image %s", m.Image)
	if err := image.WriteLayout(filepath.Join(o.Out, "image"), img, o.Version); err != nil {
		return nil, err
	}
	if _, err := image.WriteTarballs(o.Out, o.repository(), o.Version, img); err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(o.Out, "sbom.spdx.json"), img.SBOM, 0o644)
}

// writeManifests writes install.yaml and the packaged chart, and returns
// the chart.
func writeManifests(o Options, m *Manifest, when time.Time) ([]byte, error) {
	install, err := InstallYAML(o.Root, m.Image, o.Version)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "install.yaml"), install, 0o644); err != nil {
		return nil, err
	}
	chart, err := PackageChart(filepath.Join(o.Root, "charts", "muster"), ChartValues{Version: o.Version, Repository: o.repository(), Digest: m.Digest}, when)
	if err != nil {
		return nil, err
	}
	m.Chart = "muster-" + strings.TrimPrefix(o.Version, "v") + ".tgz"
	return chart, os.WriteFile(filepath.Join(o.Out, m.Chart), chart, 0o644)
}

// buildCLIs builds the muster CLI for each of o's platforms.
func buildCLIs(ctx context.Context, o Options, commit string) error {
	for _, p := range o.CLIPlatforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("release: CLI platform %q is not os/arch", p)
		}
		start := time.Now()
		out := filepath.Join(o.Out, fmt.Sprintf("muster-%s-%s-%s", o.Version, goos, goarch))
		if err := image.GoBuild(ctx, o.Root, "./cmd/muster", out, goos, goarch, o.Version, commit); err != nil {
			return err
		}
		o.Log("built muster for %s in %s", p, time.Since(start).Round(time.Second))
	}
	return nil
}

// push pushes the image (with its SBOM) and the chart to o.Registry.
func push(o Options, img *image.Result, chart []byte, m *Manifest) error {
	pushed, err := image.Push(o.repository()+":"+o.Version, img, o.Remote...)
	if err != nil {
		return err
	}
	o.Log("pushed %s", pushed)
	ref, err := PushChart(o.Registry+"/charts", chart, o.Remote...)
	if err != nil {
		return err
	}
	m.ChartRef = ref
	o.Log("pushed the chart: helm install muster oci://%s/charts/muster --version %s", o.Registry, strings.TrimPrefix(o.Version, "v"))
	return nil
}

// Head is the checkout's commit and its time: a release's files and
// image carry that time, not the clock's, so they are reproducible.
func Head(root string) (commit string, when time.Time, err error) { return Commit(root, "HEAD") }

// Commit is a revision's full commit and its time.
func Commit(root, rev string) (commit string, when time.Time, err error) {
	out, err := git(root, "show", "-s", "--format=%H %ct", rev)
	if err != nil {
		return "", time.Time{}, err
	}
	sha, ts, ok := strings.Cut(strings.TrimSpace(out), " ")
	sec, perr := strconv.ParseInt(ts, 10, 64)
	if !ok || perr != nil {
		return "", time.Time{}, fmt.Errorf("release: git show %s printed %q", rev, out)
	}
	return sha, time.Unix(sec, 0).UTC(), nil
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Checksums writes SHA256SUMS for every file in dir (sha256sum's format,
// so `sha256sum -c SHA256SUMS` checks a download) and returns them.
func Checksums(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "SHA256SUMS" || e.Name() == "release.json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		s := sha256.Sum256(b)
		sums[e.Name()] = hex.EncodeToString(s[:])
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return sums, os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// Notes are the release notes: how to install this release and what
// changed since the previous tag (every commit, from the git log).
func Notes(root, version string, m *Manifest) ([]byte, error) {
	rng := "HEAD"
	since := "the first commit"
	if prev, err := git(root, "describe", "--tags", "--abbrev=0", "--match", "v*", "HEAD^"); err == nil && strings.TrimSpace(prev) != "" {
		prev = strings.TrimSpace(prev)
		rng, since = prev+"..HEAD", prev
	}
	log, err := git(root, "log", "--no-merges", "--format=- %s (%h)", rng)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Muster %s\n\n", version)
	fmt.Fprintf(&b, "Commit %s. Operator image `%s`.\n\n", m.Commit, m.Image)
	b.WriteString("## Install\n\n```sh\n")
	b.WriteString("kubectl apply --server-side -f install.yaml\n")
	fmt.Fprintf(&b, "# or: helm install muster %s -n muster-system --create-namespace\n", m.Chart)
	b.WriteString("```\n\nVerify a download with `sha256sum -c SHA256SUMS`; the image's SBOM is `sbom.spdx.json`, also attached to the image in the registry.\n\n")
	fmt.Fprintf(&b, "## Changes since %s\n\n%s", since, log)
	return []byte(b.String()), nil
}

// ChartRef is the OCI reference a chart of version is pushed to under
// repo (Helm's layout: <repo>/<chart name>:<chart version>).
func ChartRef(repo, version string) (name.Tag, error) {
	return name.NewTag(repo+"/muster:"+strings.TrimPrefix(version, "v"), name.WeakValidation, image.LoopbackOption(repo))
}
