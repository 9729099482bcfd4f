package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
)

// Store pulls images from the local registry mirror into DIR/images:
//
//	DIR/images/sha256-<hex>/rootfs       the unpacked root filesystem of one image manifest
//	DIR/images/sha256-<hex>/config.json  its OCI image config
//	DIR/images/refs/<sha256 of ref>.json which manifest a reference resolved to last
//	DIR/images/.unpack-*                 an unpack in progress (removed on start)
//
// An entry appears by renaming a complete unpack into place, so a crash
// never leaves a half-unpacked image that a later run would use.
type Store struct {
	dir    string
	mirror string
	opts   []remote.Option

	mu    sync.Mutex
	locks map[string]*sync.Mutex // by manifest digest: one unpack at a time
}

// Image is an image unpacked in the store.
type Image struct {
	// Ref is the mirror's repo@digest of what the reference resolved to
	// (an image index's digest when it named one, as a kubelet reports the
	// repo digest it pulled): the container's imageID. Digest is the digest
	// of the platform's image that runs, the cache's key.
	Ref    string
	Digest string
	Rootfs string
	Config v1.Config
}

// PullError is a failure to pull an image the mirror may have: the
// container waits (ErrImagePull) rather than run something else.
type PullError struct {
	Image string
	Err   error
}

func (e *PullError) Error() string {
	return fmt.Sprintf("failed to pull image %q: %v", e.Image, e.Err)
}

func (e *PullError) Unwrap() error { return e.Err }

// NewStore returns the store under dir for the mirror (HOST:PORT), and
// removes unpacks a crashed run left.
func NewStore(dir, mirror string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o700); err != nil {
		return nil, err
	}
	// The rootfs trees hold set-uid programs and files of any owner: only
	// root may walk into them from the host.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".unpack-*"))
	for _, l := range leftovers {
		if err := os.RemoveAll(l); err != nil {
			return nil, fmt.Errorf("removing an interrupted unpack: %w", err)
		}
	}
	return &Store{
		dir: dir, mirror: mirror, locks: map[string]*sync.Mutex{},
		opts: []remote.Option{
			remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
			remote.WithTransport(http.DefaultTransport),
			// The registry is on loopback: a failure is not worth long retries.
			remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 3}),
		},
	}, nil
}

// Mirror is the registry the store pulls from.
func (s *Store) Mirror() string { return s.mirror }

// Resolve returns the unpacked image for a container's image reference,
// pulling it if the pull policy says so. It returns nil, nil when the
// mirror does not have the image (the container runs the host's programs),
// and a *PullError when the mirror cannot be asked or the pull fails.
//
// The policy follows the kubelet: Always asks the mirror which manifest the
// reference names (and pulls only a manifest not unpacked yet),
// IfNotPresent uses what the reference resolved to before, Never uses only
// what is unpacked already (else the host's programs). A digest reference
// names fixed content: once unpacked it is never asked for again.
func (s *Store) Resolve(ctx context.Context, image string, policy corev1.PullPolicy) (*Image, error) {
	ref, err := MirrorRef(image, s.mirror)
	if err != nil {
		return nil, &PullError{Image: image, Err: err}
	}
	if policy != corev1.PullAlways || isDigest(ref) {
		if img := s.known(ref); img != nil {
			return img, nil
		}
	}
	if policy == corev1.PullNever {
		slog.Debug("image not unpacked and pull policy Never: running the host's programs", "image", image)
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	opts := append([]remote.Option{remote.WithContext(ctx)}, s.opts...)
	desc, err := remote.Get(ref, opts...)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &PullError{Image: image, Err: fmt.Errorf("from %s: %w", ref, err)}
	}
	img, err := desc.Image() // an index: the linux/GOARCH image it lists
	if err != nil {
		return nil, &PullError{Image: image, Err: fmt.Errorf("from %s: %w", ref, err)}
	}
	out, err := s.unpacked(ref, img)
	if err != nil {
		return nil, &PullError{Image: image, Err: fmt.Errorf("from %s: %w", ref, err)}
	}
	out.Ref = ref.Context().Digest(desc.Digest.String()).String()
	s.remember(ref, out.Digest, desc.Digest.String())
	return out, nil
}

// notFound reports a registry's answer that it has no such manifest or
// repository, as opposed to a failure to ask it.
func notFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range te.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}

// unpacked returns img from the cache, unpacking it first if needed.
func (s *Store) unpacked(ref name.Reference, img v1.Image) (*Image, error) {
	dg, err := img.Digest()
	if err != nil {
		return nil, err
	}
	lock := s.lock(dg.String())
	lock.Lock()
	defer lock.Unlock()
	if out := s.load(ref, dg.String()); out != nil {
		return out, nil
	}
	start := time.Now()
	if err := s.unpack(img, s.entry(dg.String())); err != nil {
		return nil, err
	}
	slog.Info("pulled and unpacked image", "ref", ref.String(), "digest", dg.String(), "took", time.Since(start).Round(time.Millisecond))
	out := s.load(ref, dg.String())
	if out == nil {
		return nil, fmt.Errorf("unpacked image %s cannot be read back", dg)
	}
	return out, nil
}

func (s *Store) lock(digest string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.locks[digest]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[digest] = l
	}
	return l
}

// unpack applies img's layers in order into a temporary directory, writes
// its config next to the tree and renames the whole into place.
func (s *Store) unpack(img v1.Image, final string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.dir, ".unpack-")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	root := filepath.Join(tmp, "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		return err
	}
	t, err := openTree(root)
	if err != nil {
		return err
	}
	defer t.close()
	for i, l := range layers {
		if err := applyRemoteLayer(t, l); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
	}
	b, err := json.Marshal(cf)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "config.json"), b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	done = true
	return nil
}

// applyRemoteLayer streams one layer into the tree. The stream is read to
// its end, where the layer's digest is verified.
func applyRemoteLayer(t *tree, l v1.Layer) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	if err := applyLayer(t, rc); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, rc)
	return err
}

// entry is the cache directory of a manifest digest ("sha256:…" has a
// colon, which overlayfs options cannot hold).
func (s *Store) entry(digest string) string {
	return filepath.Join(s.dir, strings.ReplaceAll(digest, ":", "-"))
}

// load reads a complete cache entry; nil when there is none.
func (s *Store) load(ref name.Reference, digest string) *Image {
	dir := s.entry(digest)
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil
	}
	var cf v1.ConfigFile
	if err := json.Unmarshal(b, &cf); err != nil {
		return nil
	}
	return &Image{
		Ref:    ref.Context().Digest(digest).String(),
		Digest: digest,
		Rootfs: filepath.Join(dir, "rootfs"),
		Config: cf.Config,
	}
}

type refRecord struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	// RepoDigest is what the reference resolved to (see Image.Ref).
	RepoDigest string `json:"repoDigest,omitempty"`
}

func (s *Store) refFile(ref name.Reference) string {
	sum := sha256.Sum256([]byte(ref.String()))
	return filepath.Join(s.dir, "refs", hex.EncodeToString(sum[:])+".json")
}

// known returns the image ref resolved to last time, if it is unpacked.
func (s *Store) known(ref name.Reference) *Image {
	b, err := os.ReadFile(s.refFile(ref))
	if err != nil {
		return nil
	}
	var rec refRecord
	if json.Unmarshal(b, &rec) != nil || rec.Ref != ref.String() {
		return nil
	}
	img := s.load(ref, rec.Digest)
	if img != nil && rec.RepoDigest != "" {
		img.Ref = ref.Context().Digest(rec.RepoDigest).String()
	}
	return img
}

// remember records what ref resolved to (written aside and renamed, so a
// reader never sees half a record).
func (s *Store) remember(ref name.Reference, digest, repoDigest string) {
	b, _ := json.Marshal(refRecord{Ref: ref.String(), Digest: digest, RepoDigest: repoDigest})
	p := s.refFile(ref)
	f, err := os.CreateTemp(filepath.Dir(p), ".rec-")
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), p)
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}
	if err != nil {
		slog.Warn("recording image reference", "ref", ref.String(), "err", err)
	}
}
