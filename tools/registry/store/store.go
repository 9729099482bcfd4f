// Package store is the local cluster's registry: go-containerregistry's
// registry handler with its blobs on disk, and a journal of the manifests
// pushed to it, replayed at start. The handler keeps manifests in memory
// only; without the journal a restarted registry would answer 404 for an
// image the process node is about to pull, and the node would take it for
// an image the registry never had.
package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/registry"
)

// entry is one manifest PUT, as the journal keeps it.
type entry struct {
	Path        string `json:"path"`
	ContentType string `json:"contentType"`
	Body        []byte `json:"body"`
}

// Handler serves the registry from dir: dir/blobs holds the blobs,
// dir/manifests.jsonl the journal.
func Handler(dir string, logger *log.Logger) (http.Handler, error) {
	blobs := filepath.Join(dir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, err
	}
	reg := registry.New(
		registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs)),
		registry.WithReferrersSupport(true),
		registry.Logger(logger),
	)
	s := &journaled{next: reg, path: filepath.Join(dir, "manifests.jsonl")}
	if err := s.replay(); err != nil {
		return nil, err
	}
	return s, nil
}

type journaled struct {
	next http.Handler
	path string
	mu   sync.Mutex
}

// isManifestPut is whether r pushes a manifest (PUT /v2/<name>/manifests/<ref>).
func isManifestPut(r *http.Request) bool {
	if r.Method != http.MethodPut {
		return false
	}
	elems := strings.Split(r.URL.Path, "/")
	return len(elems) >= 4 && elems[1] == "v2" && elems[len(elems)-2] == "manifests"
}

func (s *journaled) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isManifestPut(r) {
		s.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	s.next.ServeHTTP(rec, r)
	if rec.Code/100 == 2 {
		if err := s.append(entry{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Body: body}); err != nil {
			http.Error(w, "journal: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// append writes one entry and syncs it: a push the client was told
// succeeded survives a crash.
func (s *journaled) append(e entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// replay pushes every journalled manifest again, in order, so tags end
// where they were. A torn last line (a crash mid-write) is dropped.
func (s *journaled) replay() error {
	data, err := os.ReadFile(s.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	for i, line := range lines {
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			if i == len(lines)-1 {
				break // torn by a crash while it was written
			}
			return fmt.Errorf("journal %s line %d: %w", s.path, i+1, err)
		}
		req := httptest.NewRequest(http.MethodPut, e.Path, bytes.NewReader(e.Body))
		req.Header.Set("Content-Type", e.ContentType)
		rec := httptest.NewRecorder()
		s.next.ServeHTTP(rec, req)
		if rec.Code/100 != 2 {
			return fmt.Errorf("journal %s line %d: replaying %s: %d %s", s.path, i+1, e.Path, rec.Code, rec.Body.String())
		}
	}
	return nil
}
