package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

// operatorPprofAddr is where config/profiling serves the operator's
// /debug/pprof, in its pod's network namespace.
const operatorPprofAddr = "127.0.0.1:8082"

// profileAPIServer records the API server's CPU profile over the first
// seconds of a measurement into out/<name>-apiserver.pprof, for
// `go tool pprof`: where the API server spends what one side costs more
// than the other. It returns a function that waits for the profile.
func (b *bench) profileAPIServer(ctx context.Context, name string) func() error {
	if b.o.profile <= 0 {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(b.o.profile)).DoRaw(ctx)
		if err != nil {
			done <- fmt.Errorf("profiling the API server: %w", err)
			return
		}
		done <- b.saveProfile(name+"-apiserver.pprof", raw)
	}()
	return func() error { return <-done }
}

// profileOperatorHeap records the operator's heap profile into
// out/<name>-operator-heap.pprof, for `go tool pprof -sample_index=inuse_space`:
// what its memory holds, and -sample_index=alloc_space: what it allocated
// since it started.
func (b *bench) profileOperatorHeap(ctx context.Context, name string) error {
	if b.o.profile <= 0 {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+operatorPprofAddr+"/debug/pprof/heap", nil)
	if err != nil {
		return err
	}
	resp, err := b.opMetrics.http.Do(req)
	if err != nil {
		return fmt.Errorf("profiling the operator's heap: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("profiling the operator's heap: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling the operator's heap: %s: %s", resp.Status, raw)
	}
	return b.saveProfile(name+"-operator-heap.pprof", raw)
}

// saveProfile writes a profile into the report's folder.
func (b *bench) saveProfile(file string, raw []byte) error {
	if err := os.MkdirAll(b.o.out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.o.out, file), raw, 0o644)
}
