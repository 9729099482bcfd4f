package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
)

// testImage is an image of the given layers with a config.
func testImage(t *testing.T, cfg v1.Config, layers ...*bytes.Reader) v1.Image {
	t.Helper()
	img := empty.Image
	for _, l := range layers {
		data, _ := io.ReadAll(l)
		tl, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, tl); err != nil {
			t.Fatal(err)
		}
	}
	img, err := mutate.Config(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// testRegistry serves an in-process registry on loopback and counts the
// manifest requests it gets.
func testRegistry(t *testing.T) (host string, manifestGets *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			n.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

func push(t *testing.T, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
}

func TestResolvePullsUnpacksAndCaches(t *testing.T) {
	host, gets := testRegistry(t)
	img := testImage(t, v1.Config{Env: []string{"A=1"}, WorkingDir: "/w"},
		layer(t, entry{name: "f", body: "v1"}, entry{name: "gone", body: "x"}),
		layer(t, entry{name: ".wh.gone"}))
	push(t, host+"/team/app:v1", img)
	dir := filepath.Join(t.TempDir(), "images")
	s, err := NewStore(dir, host)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := s.Resolve(ctx, "ghcr.io/team/app:v1", corev1.PullIfNotPresent)
	if err != nil || got == nil {
		t.Fatalf("resolve: %+v, %v", got, err)
	}
	want, _ := img.Digest()
	if got.Digest != want.String() || got.Ref != host+"/team/app@"+want.String() {
		t.Errorf("digest %s ref %s, want %s", got.Digest, got.Ref, want)
	}
	if got.Rootfs != filepath.Join(dir, strings.Replace(want.String(), ":", "-", 1), "rootfs") {
		t.Errorf("rootfs at %s", got.Rootfs)
	}
	if b, _ := os.ReadFile(filepath.Join(got.Rootfs, "f")); string(b) != "v1" || exists(filepath.Join(got.Rootfs, "gone")) {
		t.Error("the rootfs is not the image's layers applied in order")
	}
	if got.Config.WorkingDir != "/w" || len(got.Config.Env) != 1 {
		t.Errorf("config %+v", got.Config)
	}
	// IfNotPresent and Never use what is unpacked; Always asks again.
	before := gets.Load()
	for _, p := range []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullNever} {
		if again, err := s.Resolve(ctx, "ghcr.io/team/app:v1", p); err != nil || again == nil || again.Digest != got.Digest {
			t.Fatalf("%s: %+v, %v", p, again, err)
		}
	}
	if gets.Load() != before {
		t.Error("IfNotPresent/Never asked the registry for an unpacked image")
	}
	if _, err := s.Resolve(ctx, "ghcr.io/team/app:v1", corev1.PullAlways); err != nil || gets.Load() == before {
		t.Errorf("Always must ask the registry (err %v)", err)
	}
	// A digest reference is never asked for again once unpacked.
	byDigest := "ghcr.io/team/app:v1@" + want.String()
	if _, err := s.Resolve(ctx, byDigest, corev1.PullAlways); err != nil {
		t.Fatal(err)
	}
	before = gets.Load()
	if _, err := s.Resolve(ctx, byDigest, corev1.PullAlways); err != nil || gets.Load() != before {
		t.Errorf("a digest reference was pulled twice (err %v)", err)
	}
	// A new store over the same directory (a node restart) knows the image.
	s2, err := NewStore(dir, host)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s2.Resolve(ctx, "ghcr.io/team/app:v1", corev1.PullNever); err != nil || again == nil {
		t.Errorf("after a restart: %+v, %v", again, err)
	}
}

func TestResolveIndexPicksThePlatform(t *testing.T) {
	host, _ := testRegistry(t)
	mine := testImage(t, v1.Config{}, layer(t, entry{name: "arch", body: runtime.GOARCH}))
	other := testImage(t, v1.Config{}, layer(t, entry{name: "arch", body: "other"}))
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	r, _ := name.ParseReference(host+"/library/multi:1", name.Insecure) // where "multi:1" is looked up
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	s, err := NewStore(t.TempDir(), host)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Resolve(context.Background(), "multi:1", corev1.PullIfNotPresent)
	if err != nil || got == nil {
		t.Fatalf("%+v, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(got.Rootfs, "arch")); string(b) != runtime.GOARCH {
		t.Errorf("unpacked the image for %q", b)
	}
	if d, _ := mine.Digest(); got.Digest != d.String() {
		t.Errorf("cached under %s, want the platform manifest %s", got.Digest, d)
	}
	// The imageID is the digest the reference resolved to, the index's, as
	// a kubelet reports the repo digest it pulled; and so it stays when the
	// tag is resolved again from what was remembered.
	id, _ := idx.Digest()
	if want := host + "/library/multi@" + id.String(); got.Ref != want {
		t.Errorf("ref %s, want %s", got.Ref, want)
	}
	again, err := s.Resolve(context.Background(), "multi:1", corev1.PullIfNotPresent)
	if err != nil || again == nil || again.Ref != got.Ref {
		t.Errorf("resolved again: %+v, %v; want ref %s", again, err, got.Ref)
	}
}

// An image the mirror does not have runs the host's programs (nil); a
// mirror that cannot be asked is a pull error, never a silent fallback.
func TestResolveNotFoundAndUnreachable(t *testing.T) {
	host, _ := testRegistry(t)
	s, err := NewStore(t.TempDir(), host)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"python:3.12", host + "/nope/nope:1"} {
		if got, err := s.Resolve(context.Background(), ref, corev1.PullIfNotPresent); got != nil || err != nil {
			t.Errorf("%s: not in the mirror, want nil, nil; got %+v, %v", ref, got, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	_ = l.Close()
	s, err = NewStore(t.TempDir(), dead)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Resolve(context.Background(), "ghcr.io/team/app:v1", corev1.PullIfNotPresent)
	var pe *PullError
	if got != nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), `"ghcr.io/team/app:v1"`) {
		t.Errorf("unreachable mirror: want a PullError naming the image, got %+v, %v", got, err)
	}
	// Never does not ask: with nothing unpacked, the host's programs.
	if got, err := s.Resolve(context.Background(), "ghcr.io/team/app:v1", corev1.PullNever); got != nil || err != nil {
		t.Errorf("Never: %+v, %v", got, err)
	}
}

// A crash in the middle of an unpack leaves a temporary directory that is
// never taken for the image, and is removed on the next start.
func TestInterruptedUnpackIsNotUsed(t *testing.T) {
	host, _ := testRegistry(t)
	img := testImage(t, v1.Config{}, layer(t, entry{name: "f", body: "x"}))
	push(t, host+"/app:1", img)
	dir := t.TempDir()
	half := filepath.Join(dir, ".unpack-123", "rootfs")
	if err := os.MkdirAll(half, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := NewStore(dir, host)
	if err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Dir(half)) {
		t.Error("the interrupted unpack was not removed")
	}
	// A broken layer leaves no entry behind either.
	bad := testImage(t, v1.Config{}, layer(t, entry{name: "../evil", body: "x"}))
	push(t, host+"/bad:1", bad)
	_, err = s.Resolve(context.Background(), host+"/bad:1", corev1.PullIfNotPresent)
	if err == nil || !strings.Contains(err.Error(), "..") {
		t.Errorf("want the escaping entry named, got %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "refs" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestResolveUser(t *testing.T) {
	root := t.TempDir()
	if err := apply(t, root, layer(t,
		entry{name: "etc/passwd", body: "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1001:App:/home/app:/bin/sh\nnonroot:x:65532:65532::/home/nonroot:/sbin/nologin\n"},
		entry{name: "etc/group", body: "root:x:0:\napp:x:1001:\nvideo:x:44:app,other\nstaff:x:50:\n"},
	)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]User{
		"":             {UID: 0, GID: 0, Home: "/root"},
		"app":          {UID: 1000, GID: 1001, Groups: []int64{44}, Home: "/home/app"},
		"1000":         {UID: 1000, GID: 1001, Groups: []int64{44}, Home: "/home/app"},
		"65532":        {UID: 65532, GID: 65532, Home: "/home/nonroot"},
		"4242":         {UID: 4242, GID: 0, Home: "/"},
		"4242:7":       {UID: 4242, GID: 7, Home: "/"},
		"app:staff":    {UID: 1000, GID: 50, Groups: []int64{44}, Home: "/home/app"},
		"nonroot:1234": {UID: 65532, GID: 1234, Home: "/home/nonroot"},
	}
	for spec, want := range cases {
		got, err := ResolveUser(root, spec)
		if err != nil || got.UID != want.UID || got.GID != want.GID || got.Home != want.Home || len(got.Groups) != len(want.Groups) ||
			(len(want.Groups) > 0 && got.Groups[0] != want.Groups[0]) {
			t.Errorf("%q: got %+v, %v; want %+v", spec, got, err, want)
		}
	}
	for _, bad := range []string{"nobody", "app:nogroup"} {
		if _, err := ResolveUser(root, bad); err == nil {
			t.Errorf("%q: unknown names must fail", bad)
		}
	}
	if u := LookupUID(root, 1000); u.GID != 1001 || u.Home != "/home/app" {
		t.Errorf("LookupUID(1000) = %+v", u)
	}
	if u := LookupUID(root, 5); u.GID != 0 || u.Home != "/" {
		t.Errorf("LookupUID(5) = %+v", u)
	}
	// An image whose /etc/passwd points at the node's is read in its root.
	evil := t.TempDir()
	if err := apply(t, evil, layer(t, entry{name: "etc/passwd", typ: tar.TypeSymlink, link: "/etc/passwd"})); err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveUser(evil, "root"); err == nil {
		t.Error("the node's /etc/passwd was read through the image's symlink")
	}
}
