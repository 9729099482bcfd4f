package image

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

var commitTime = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func testOptions() Options {
	return Options{Version: "v9.8.7", Commit: "0123456789abcdef0123456789abcdef01234567", Time: commitTime}
}

// files reads a layer back: name -> header.
func files(t *testing.T, l v1.Layer) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	hs, bodies := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hs, bodies
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		hs[h.Name], bodies[h.Name] = h, b
	}
}

// The same files and time give the same layer bytes; the time is part of it.
func TestLayersAreReproducible(t *testing.T) {
	a, err := baseLayer(commitTime)
	if err != nil {
		t.Fatal(err)
	}
	b, err := baseLayer(commitTime)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("two builds of the base layer: %s and %s", da, db)
	}
	c, err := baseLayer(commitTime.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if dc, _ := c.Digest(); dc == da {
		t.Errorf("a later commit's layer has the same digest %s: the time is not in it", dc)
	}
}

// The base layer has what a static non-root binary needs: CA certificates
// Go can load, a passwd naming 65532, a sticky /tmp, a home it owns.
func TestBaseLayer(t *testing.T) {
	l, err := baseLayer(commitTime)
	if err != nil {
		t.Fatal(err)
	}
	hs, bodies := files(t, l)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bodies[strings.TrimPrefix(CACertificates, "/")]) {
		t.Fatal("the CA bundle holds no certificate Go can read")
	}
	if n := strings.Count(string(bodies[strings.TrimPrefix(CACertificates, "/")]), "BEGIN CERTIFICATE"); n < 100 {
		t.Errorf("the CA bundle has %d certificates, want Mozilla's (over 100)", n)
	}
	if !strings.Contains(string(bodies["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("passwd: %s", bodies["etc/passwd"])
	}
	if h := hs["tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v, want mode 1777", h)
	}
	if h := hs["home/nonroot/"]; h == nil || h.Uid != NonRoot || h.Gid != NonRoot {
		t.Errorf("/home/nonroot: %+v, want owned by %d", h, NonRoot)
	}
	for name, h := range hs {
		if !h.ModTime.Equal(commitTime) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: time %s, owner names %q/%q: want the commit's time and no names", name, h.ModTime, h.Uname, h.Gname)
		}
	}
}

func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "muster-operator")
	if err := os.WriteFile(p, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A platform's image runs the operator as 65532 from /muster-operator,
// carries the OCI labels, and is dated by the commit.
func TestPlatformImage(t *testing.T) {
	base, err := baseLayer(commitTime)
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	img, err := platformImage(base, fakeBinary(t), v1.Platform{OS: "linux", Architecture: "arm64"}, o)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != Entrypoint || cf.Architecture != "arm64" || cf.OS != "linux" {
		t.Errorf("config: user %q, entrypoint %v, platform %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source": Source, "org.opencontainers.image.revision": o.Commit, "org.opencontainers.image.version": o.Version,
	} {
		if cf.Config.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], want)
		}
	}
	if !cf.Created.Equal(commitTime) {
		t.Errorf("created %s, want the commit's time", cf.Created)
	}
	layers, _ := img.Layers()
	if len(layers) != 2 {
		t.Fatalf("%d layers, want the base and the binary", len(layers))
	}
	hs, _ := files(t, layers[1])
	if h := hs["usr/local/bin/muster-operator"]; h == nil || h.Mode != 0o755 || h.Uid != 0 {
		t.Errorf("the binary's entry: %+v", h)
	}
}

// A release binary is built static and with -trimpath: no path of the
// checkout is in it. And the SBOM lists its modules with their versions,
// as SPDX 2.3. The local registry (tools/registry) is a small main package
// of this module that links go-containerregistry.
func TestSPDXListsTheModules(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(t.TempDir(), "muster-registry")
	if err := GoBuild(context.Background(), root, "./tools/registry", self, "linux", runtime.GOARCH, "v9.8.7", "abc"); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(bin), root) {
		t.Errorf("the binary holds the checkout's path %s: not built with -trimpath", root)
	}
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	doc, err := SPDX([]string{self}, testOptions(), d)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := SPDX([]string{self}, testOptions(), d)
	if string(doc) != string(again) {
		t.Error("the same binaries give two different SBOMs")
	}
	var got spdxDocument
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if got.SPDXVersion != "SPDX-2.3" || got.DocumentDescribes[0] != "SPDXRef-Image" {
		t.Errorf("document %s describing %v", got.SPDXVersion, got.DocumentDescribes)
	}
	want := map[string]bool{"stdlib": false, "github.com/google/go-containerregistry": false}
	for _, p := range got.Packages {
		if _, ok := want[p.Name]; ok && p.VersionInfo != "" {
			want[p.Name] = true
		}
	}
	for m, found := range want {
		if !found {
			t.Errorf("the SBOM has no versioned package %s", m)
		}
	}
}

// An image pushed with its SBOM has the SBOM among its referrers, so a
// registry's referrers API (and oras discover) finds it.
func TestPushAttachesTheSBOM(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Index: idx, SBOM: []byte(`{"spdxVersion":"SPDX-2.3"}`)}
	ref, err := Push(host+"/muster-operator:v9.8.7", r)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if ref.DigestStr() != want.String() {
		t.Errorf("pushed as %s, want digest %s", ref, want)
	}
	subject, _ := name.NewDigest(host+"/muster-operator@"+want.String(), name.Insecure)
	referrers, err := remote.Referrers(subject)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := referrers.IndexManifest()
	if len(im.Manifests) != 1 {
		t.Fatalf("referrers of the image: %+v, want the SBOM", im.Manifests)
	}
	// go-containerregistry's registry lists a referrer under its config's
	// media type; the artifactType is the manifest's own.
	art, err := remote.Image(subject.Context().Digest(im.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := art.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != SBOMMediaType || m.Subject == nil || m.Subject.Digest != want {
		t.Errorf("the referrer's artifactType %q and subject %+v, want %s about %s", m.ArtifactType, m.Subject, SBOMMediaType, want)
	}
	layers, _ := art.Layers()
	rc, _ := layers[0].Compressed()
	body, _ := io.ReadAll(rc)
	if string(body) != string(r.SBOM) {
		t.Errorf("the attached SBOM reads %q", body)
	}
}
