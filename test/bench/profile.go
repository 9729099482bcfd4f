package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

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
		if err := os.MkdirAll(b.o.out, 0o755); err != nil {
			done <- err
			return
		}
		done <- os.WriteFile(filepath.Join(b.o.out, name+"-apiserver.pprof"), raw, 0o644)
	}()
	return func() error { return <-done }
}
