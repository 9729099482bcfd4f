// Package image builds Muster's operator image from source, with no
// container engine and no base image: the operator is a static Go binary,
// so the image is that binary, CA certificates and the files a non-root
// user needs, laid out in tar layers written here. It is what `make image`,
// `make release` and the local cluster (muster-dev) install.
//
// The build is reproducible: the binaries are built with -trimpath and no
// build ID, every file in a layer has the commit's time and fixed owners,
// and nothing else in the image depends on the machine or the clock, so
// the same commit gives the same digest anywhere with the same Go.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Name is the operator image's repository, the name every manifest in the
// repository gives it; a release pushes it under a registry of its choice.
const Name = "ghcr.io/muster-dev/muster-operator"

// Source is the repository the image's labels point to.
const Source = "https://github.com/muster-dev/muster"

// Entrypoint is where the operator binary is in the image: on the image's
// PATH, so a manifest that names the command (command: [muster-operator],
// as manifests before the image did) runs it too.
const Entrypoint = "/usr/local/bin/muster-operator"

// NonRoot is the user and group the operator runs as: the uid distroless
// images call nonroot, so a cluster's policies that expect it recognise it.
const NonRoot = 65532

// CACertificates is where the image's CA bundle is, the path Go and most
// TLS libraries on Debian-like systems look at first.
const CACertificates = "/etc/ssl/certs/ca-certificates.crt"

// Platforms are the platforms the image index holds.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Options say what to build.
type Options struct {
	// Root is the checkout the operator is built from.
	Root string
	// Version is the release (v0.2.0); Commit the full revision and Time
	// the commit's time, which every file and the image's creation carry.
	Version string
	Commit  string
	Time    time.Time
	// Platforms to build; nil means Platforms.
	Platforms []v1.Platform
	// WorkDir holds the built binaries (one folder per platform).
	WorkDir string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Result is a built image.
type Result struct {
	Index v1.ImageIndex
	// SBOM is the SPDX document of what the operator binaries contain.
	SBOM []byte
	// Binaries are the operator binaries by platform ("linux/amd64").
	Binaries map[string]string
}

// Build compiles the operator for each platform and assembles the image
// index, its SBOM beside it.
func Build(ctx context.Context, o Options) (*Result, error) {
	if o.Version == "" || o.Commit == "" || o.Time.IsZero() {
		return nil, fmt.Errorf("image: version, commit and time are required")
	}
	plats := o.Platforms
	if plats == nil {
		plats = Platforms
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	base, err := baseLayer(o.Time)
	if err != nil {
		return nil, err
	}
	res := &Result{Binaries: map[string]string{}}
	idx := emptyIndex()
	var bins []string
	for _, p := range plats {
		bin := filepath.Join(o.WorkDir, p.OS+"-"+p.Architecture, "muster-operator")
		start := time.Now()
		if err := GoBuild(ctx, o.Root, "./cmd/muster-operator", bin, p.OS, p.Architecture, o.Version, o.Commit); err != nil {
			return nil, err
		}
		logf("built muster-operator for %s/%s in %s", p.OS, p.Architecture, time.Since(start).Round(time.Second))
		res.Binaries[p.OS+"/"+p.Architecture] = bin
		bins = append(bins, bin)
		img, err := platformImage(base, bin, p, o)
		if err != nil {
			return nil, err
		}
		plat := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	res.Index = mutate.Annotations(idx, labels(o)).(v1.ImageIndex)
	digest, err := res.Index.Digest()
	if err != nil {
		return nil, err
	}
	if res.SBOM, err = SPDX(bins, o, digest); err != nil {
		return nil, err
	}
	return res, nil
}

// GoBuild builds one static, stripped binary the way every release binary
// is built: no cgo, -trimpath (no path of the checkout in it), no build ID,
// no VCS stamp (the commit is set with -X instead, so a tree with a stray
// file still builds the same bytes), the version and commit linked in.
func GoBuild(ctx context.Context, root, pkg, out, goos, goarch, version, commit string) error {
	ldflags := strings.Join([]string{
		"-s", "-w", "-buildid=",
		"-X", "github.com/muster-dev/muster/internal/version.Version=" + version,
		"-X", "github.com/muster-dev/muster/internal/version.Commit=" + commit,
	}, " ")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-mod=readonly")
	if goarch == "amd64" {
		// The baseline every amd64 machine runs, whatever the builder's
		// environment says.
		cmd.Env = append(cmd.Env, "GOAMD64=v1")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s/%s: %w\n%s", pkg, goos, goarch, err, b)
	}
	return nil
}

// labels are the OCI annotations of the image: where it comes from and
// which release it is, so a registry or scanner can tell without running it.
func labels(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "muster-operator",
		"org.opencontainers.image.description": "Muster: distributed training jobs on Kubernetes",
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.url":         Source,
		"org.opencontainers.image.revision":    o.Commit,
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.created":     o.Time.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

func platformImage(base v1.Layer, bin string, p v1.Platform, o Options) (v1.Image, error) {
	binLayer, err := binaryLayer(bin, o.Time)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: o.Time.UTC()}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "muster: CA certificates, passwd, /tmp", Comment: "tools/image"}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "muster: " + Entrypoint, Comment: "tools/image"}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	cf.Author = ""
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
		Entrypoint: []string{Entrypoint},
		WorkingDir: "/",
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=" + CACertificates,
			"HOME=/home/nonroot",
		},
		Labels: labels(o),
	}
	return mutate.ConfigFile(img, cf)
}

// file is one entry of a layer.
type file struct {
	name string
	mode int64
	uid  int
	dir  bool
	body []byte
}

// baseLayer holds what any static binary needs of an operating system:
// CA certificates (Mozilla's, from the pinned Go module, so they do not
// depend on the build machine), a passwd and group naming root and
// nonroot, nonroot's home and a /tmp.
func baseLayer(t time.Time) (v1.Layer, error) {
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	return layer(t, []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CACertificates, "/"), mode: 0o644, body: certs},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, uid: NonRoot, dir: true},
		{name: "root", mode: 0o700, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	})
}

func binaryLayer(bin string, t time.Time) (v1.Layer, error) {
	body, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	return layer(t, []file{
		{name: "usr", mode: 0o755, dir: true},
		{name: "usr/local", mode: 0o755, dir: true},
		{name: "usr/local/bin", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(Entrypoint, "/"), mode: 0o755, body: body},
	})
}

// caBundle is the PEM bundle of the roots a PEM file can express: a root
// whose trust carries a constraint (distrusted after a date) is left out,
// as Debian's ca-certificates leaves it out.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	if b.Len() == 0 {
		return nil, fmt.Errorf("image: the CA bundle is empty")
	}
	return b.Bytes(), nil
}

// layer writes files, in name order, into one tar layer whose bytes depend
// on nothing but the files and t.
func layer(t time.Time, files []file) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, ModTime: t.UTC().Truncate(time.Second), Uid: f.uid, Gid: f.uid,
			Typeflag: tar.TypeReg, Size: int64(len(f.body)), Format: tar.FormatUSTAR,
		}
		if f.dir {
			h.Name += "/"
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// HostPlatform is the platform of the machine the build runs on.
func HostPlatform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

func emptyIndex() v1.ImageIndex { return mutate.IndexMediaType(empty.Index, types.OCIImageIndex) }
