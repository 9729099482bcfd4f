package store

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func serve(t *testing.T, dir string) (*httptest.Server, string) {
	t.Helper()
	h, err := Handler(dir, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	return srv, strings.TrimPrefix(srv.URL, "http://")
}

// A registry restarted from its folder still serves what was pushed to it,
// by tag and by digest, and a crash that tore the journal's last line
// loses that push only.
func TestRestartKeepsPushedImages(t *testing.T) {
	dir := t.TempDir()
	srv, host := serve(t, dir)
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(host+"/team/app:v1", name.Insecure)
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	srv.Close()

	f, err := os.OpenFile(filepath.Join(dir, "manifests.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"path":"/v2/team/app/manifests/v2","contentT`); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	srv, host = serve(t, dir)
	defer srv.Close()
	for _, ref := range []string{host + "/team/app:v1", host + "/team/app@" + want.String()} {
		r, _ := name.ParseReference(ref, name.Insecure)
		got, err := remote.Image(r)
		if err != nil {
			t.Fatalf("after a restart, %s: %v", ref, err)
		}
		if d, _ := got.Digest(); d != want {
			t.Errorf("%s is %s, want %s", ref, d, want)
		}
		if _, err := got.RawConfigFile(); err != nil {
			t.Errorf("%s: its config blob is gone: %v", ref, err)
		}
	}
}
