package devcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/muster-dev/muster/tools/image"
	"github.com/muster-dev/muster/tools/release"
)

// The local cluster's registry: an OCI registry on 127.0.0.1 (tools/registry)
// that the process node pulls images from (--registry-mirror): an image
// whose repository is in it runs from its own root filesystem; any other
// image runs the host's programs, as before there was a registry. The
// operator is installed from the image muster-dev builds and pushes there.

// RegistryRepository is where the operator's image is pushed in the local
// registry.
const RegistryRepository = "muster-operator"

// RegistryAddr is the local registry's host:port.
func (c *Config) RegistryAddr() string { return fmt.Sprintf("127.0.0.1:%d", c.Ports.Registry) }

func (c *Config) registryComponent(bin string) component {
	addr := c.RegistryAddr()
	return component{
		name:   "registry",
		bin:    bin,
		args:   []string{"--listen=" + addr, "--dir=" + c.path("registry")},
		addr:   "http://" + addr,
		listen: []listenAddr{tcp(c.Ports.Registry)},
		ready:  httpOK("http://" + addr + "/v2/"),
	}
}

// operatorImageLayout is where Build leaves the operator image, an OCI
// layout of the host's platform.
func operatorImageLayout(b *Binaries) string { return filepath.Join(operatorBuildDir(b), "image") }

// operatorBuildDir holds the image's binaries, one folder per platform.
func operatorBuildDir(b *Binaries) string { return filepath.Dir(filepath.Dir(b.Operator)) }

// buildOperatorImage builds the operator's image for this machine's
// platform from the checkout, as `make image` does for a release (the same
// builder), and keeps it as an OCI layout. The go build cache makes a
// rebuild of unchanged sources take seconds.
func (c *Config) buildOperatorImage(ctx context.Context, b *Binaries) error {
	start := time.Now()
	defer c.working("building the operator image", progressEvery)()
	commit, when, err := release.Head(c.Root)
	if err != nil {
		return err
	}
	version, err := c.devVersion()
	if err != nil {
		return err
	}
	r, err := image.Build(ctx, image.Options{
		Root: c.Root, Version: version, Commit: commit, Time: when,
		Platforms: []v1.Platform{image.HostPlatform()}, WorkDir: operatorBuildDir(b),
	})
	if err != nil {
		return err
	}
	dir := operatorImageLayout(b)
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := image.WriteLayout(tmp, r, version); err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	d, _ := r.Index.Digest()
	c.logf("%-24s built in %s (%s)", "operator image", since(start), d)
	return nil
}

var makefileVersion = regexp.MustCompile(`(?m)^VERSION := (\S+)$`)

// devVersion is the Makefile's version marked as a development build.
func (c *Config) devVersion() (string, error) {
	b, err := os.ReadFile(filepath.Join(c.Root, "Makefile"))
	if err != nil {
		return "", err
	}
	m := makefileVersion.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("the Makefile has no VERSION := line")
	}
	return "v" + string(m[1]) + "-dev", nil
}

// pushOperatorImage pushes the built image to the local registry and
// returns it by digest, the reference the operator is installed with.
func (c *Config) pushOperatorImage(b *Binaries) (string, error) {
	p, err := layout.FromPath(operatorImageLayout(b))
	if err != nil {
		return "", fmt.Errorf("the operator image is not built (%w): run muster-dev build", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return "", err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	for _, d := range im.Manifests {
		if d.MediaType.IsIndex() {
			img, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return "", err
			}
			ref, err := name.NewTag(c.RegistryAddr()+"/"+RegistryRepository+":dev", name.Insecure)
			if err != nil {
				return "", err
			}
			if err := remote.WriteIndex(ref, img); err != nil {
				return "", fmt.Errorf("pushing the operator image to the local registry: %w", err)
			}
			return ref.Context().Digest(d.Digest.String()).String(), nil
		}
	}
	return "", fmt.Errorf("%s holds no image index", operatorImageLayout(b))
}
