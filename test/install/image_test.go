package install

import (
	"context"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/muster-dev/muster/tools/image"
	"github.com/muster-dev/muster/tools/release"
)

// The release's image is reproducible: built again from the same commit it
// has the same digest. It holds linux/amd64 and linux/arm64.
func TestReleaseImageIsReproducible(t *testing.T) {
	commit, when, err := release.Head(cluster.Root)
	if err != nil {
		t.Fatal(err)
	}
	r, err := image.Build(context.Background(), image.Options{
		Root: cluster.Root, Version: version, Commit: commit, Time: when, WorkDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != rel.Digest {
		t.Errorf("built again, the image is %s; the release's is %s", d, rel.Digest)
	}
	im, err := r.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	for _, m := range im.Manifests {
		plats = append(plats, m.Platform.String())
	}
	if len(plats) != 2 || plats[0] != (v1.Platform{OS: "linux", Architecture: "amd64"}).String() || plats[1] != "linux/arm64" {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", plats)
	}
}
