// Package image pulls container images from the node's local registry
// mirror, unpacks them into a root filesystem cached per manifest digest,
// and reads what the image says about how to run it (its config, its
// users and groups).
package image

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

// MirrorRef is where image is looked up in the mirror (HOST:PORT): the same
// repository path and tag or digest under the mirror's host. A reference
// with both a tag and a digest keeps only the digest, which is what names
// the content. Docker Hub short names get their implicit "library/"
// namespace, as a pull-through mirror of Docker Hub stores them.
func MirrorRef(image, mirror string) (name.Reference, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", image, err)
	}
	// The mirror is plain HTTP (a registry on the node's loopback).
	repo, err := name.NewRepository(mirror+"/"+ref.Context().RepositoryStr(), name.Insecure)
	if err != nil {
		return nil, fmt.Errorf("image %q under mirror %s: %w", image, mirror, err)
	}
	switch r := ref.(type) {
	case name.Digest:
		return repo.Digest(r.DigestStr()), nil
	case name.Tag:
		return repo.Tag(r.TagStr()), nil
	}
	return nil, fmt.Errorf("image %q: unsupported reference %T", image, ref)
}

// isDigest reports whether ref names content (immutable) rather than a tag.
func isDigest(ref name.Reference) bool {
	_, ok := ref.(name.Digest)
	return ok
}
