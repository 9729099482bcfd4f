package image

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// emptyConfig is the OCI 1.1 empty descriptor's content: an artifact that
// has no configuration of its own points at it.
const (
	emptyConfig          = "{}"
	emptyConfigMediaType = types.MediaType("application/vnd.oci.empty.v1+json")
)

// Artifact is an OCI artifact: one blob with a configuration of its own
// kind, and optionally the manifest it is about as its subject, so a
// registry lists it among that manifest's referrers (the referrers API,
// `oras discover`). An SBOM and a Helm chart are both pushed as one.
type Artifact struct {
	// ArtifactType is the manifest's artifactType ("" for a Helm chart,
	// whose type is its configuration's media type).
	ArtifactType    string
	Config          []byte
	ConfigMediaType types.MediaType
	Blob            []byte
	BlobMediaType   types.MediaType
	// Title names the blob (org.opencontainers.image.title).
	Title       string
	Subject     *v1.Descriptor
	Annotations map[string]string
}

// Image is the artifact as a v1.Image, which every writer of
// go-containerregistry (layout, remote) takes.
func (a Artifact) Image() (v1.Image, error) {
	blob := static.NewLayer(a.Blob, a.BlobMediaType)
	bd, err := partial.Descriptor(blob)
	if err != nil {
		return nil, err
	}
	cfg := static.NewLayer(a.Config, a.ConfigMediaType)
	cd, err := partial.Descriptor(cfg)
	if err != nil {
		return nil, err
	}
	layer := v1.Descriptor{MediaType: bd.MediaType, Size: bd.Size, Digest: bd.Digest}
	if a.Title != "" {
		layer.Annotations = map[string]string{"org.opencontainers.image.title": a.Title}
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  a.ArtifactType,
		Config:        v1.Descriptor{MediaType: cd.MediaType, Size: cd.Size, Digest: cd.Digest},
		Layers:        []v1.Descriptor{layer},
		Annotations:   a.Annotations,
	}
	if a.Subject != nil {
		m.Subject = &v1.Descriptor{MediaType: a.Subject.MediaType, Size: a.Subject.Size, Digest: a.Subject.Digest}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&artifactCore{blob: blob, config: cfg, manifest: raw})
}

type artifactCore struct {
	blob, config v1.Layer
	manifest     []byte
}

var _ partial.CompressedImageCore = (*artifactCore)(nil)

func (a *artifactCore) RawConfigFile() ([]byte, error) {
	rc, err := a.config.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(rc)
}
func (a *artifactCore) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifactCore) RawManifest() ([]byte, error)        { return a.manifest, nil }
func (a *artifactCore) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, l := range []v1.Layer{a.blob, a.config} {
		if d, err := l.Digest(); err == nil && d == h {
			return l, nil
		}
	}
	return nil, fmt.Errorf("artifact: no blob %s", h)
}

// SBOMArtifact attaches sbom to the manifest subject describes.
func SBOMArtifact(sbom []byte, subject v1.Descriptor) (v1.Image, error) {
	return Artifact{
		ArtifactType: SBOMMediaType, Config: []byte(emptyConfig), ConfigMediaType: emptyConfigMediaType,
		Blob: sbom, BlobMediaType: SBOMMediaType, Title: "sbom.spdx.json", Subject: &subject,
	}.Image()
}

// IndexDescriptor is the descriptor of an image index, what an artifact's
// subject and a layout's index.json name it by.
func IndexDescriptor(idx v1.ImageIndex) (v1.Descriptor, error) {
	d, err := partial.Descriptor(idx)
	if err != nil {
		return v1.Descriptor{}, err
	}
	return *d, nil
}

// WriteLayout writes the image index and its SBOM artifact as an OCI image
// layout in dir: what `crane push`, `skopeo copy oci:DIR` or `oras` take,
// and what an air-gapped install copies into its own registry. The index is
// named by its reference (org.opencontainers.image.ref.name) so tools can
// pick it by tag.
func WriteLayout(dir string, r *Result, tag string) error {
	p, err := layout.Write(dir, emptyIndex())
	if err != nil {
		return err
	}
	if err := p.AppendIndex(r.Index, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return err
	}
	sbom, err := r.SBOMImage()
	if err != nil {
		return err
	}
	return p.AppendImage(sbom)
}

// SBOMImage is r's SBOM as an artifact referring to r's index.
func (r *Result) SBOMImage() (v1.Image, error) {
	d, err := IndexDescriptor(r.Index)
	if err != nil {
		return nil, err
	}
	return SBOMArtifact(r.SBOM, d)
}

// WriteTarballs writes one tarball per platform that `docker load`,
// `podman load`, `ctr images import` and `kind load image-archive` read
// (the Docker save format, which holds one platform per name), and returns
// the files by platform.
func WriteTarballs(dir, repo, tag string, r *Result) (map[string]string, error) {
	ref, err := name.NewTag(repo + ":" + tag)
	if err != nil {
		return nil, err
	}
	im, err := r.Index.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range im.Manifests {
		img, err := r.Index.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		plat := d.Platform.OS + "-" + d.Platform.Architecture
		path := fmt.Sprintf("%s/muster-operator-%s-%s.tar", dir, tag, plat)
		if err := tarball.WriteToFile(path, ref, img); err != nil {
			return nil, err
		}
		out[d.Platform.OS+"/"+d.Platform.Architecture] = path
	}
	return out, nil
}

// Push pushes the index under ref (a tag) and its SBOM as a referrer, and
// returns the index's digest reference.
func Push(ref string, r *Result, opts ...remote.Option) (name.Digest, error) {
	tag, err := name.NewTag(ref, name.WeakValidation, LoopbackOption(ref))
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.WriteIndex(tag, r.Index, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	d, err := r.Index.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	sbom, err := r.SBOMImage()
	if err != nil {
		return name.Digest{}, err
	}
	sd, err := sbom.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	// A registry without the referrers API gets the fallback tag
	// (sha256-<digest>) ggcr maintains for it.
	if err := remote.Write(tag.Context().Digest(sd.String()), sbom, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing the SBOM of %s: %w", tag, err)
	}
	return tag.Context().Digest(d.String()), nil
}

// LoopbackOption lets a registry on this machine's loopback be spoken to
// over plain HTTP, as every container tool does for localhost.
func LoopbackOption(ref string) name.Option {
	if IsLoopback(ref) {
		return name.Insecure
	}
	return name.WeakValidation
}

// IsLoopback is whether a reference names a registry on 127.0.0.1 or
// localhost.
func IsLoopback(ref string) bool {
	for _, p := range []string{"127.0.0.1:", "localhost:", "[::1]:"} {
		if len(ref) > len(p) && ref[:len(p)] == p {
			return true
		}
	}
	return false
}
