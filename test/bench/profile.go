package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// operatorPprofAddr is where config/profiling serves the operator's
// /debug/pprof, in its pod's network namespace.
const operatorPprofAddr = "127.0.0.1:8082"

// profileCPU records CPU profiles over the first seconds of a
// measurement, for `go tool pprof`: the API server's into
// out/<name>-apiserver.pprof (where it spends what one side costs more than
// the other) and, with operator set, the operator's into
// out/<name>-operator-cpu.pprof (where its own CPU goes). It returns a
// function that waits for them.
func (b *bench) profileCPU(ctx context.Context, name string, operator bool) func() error {
	if b.o.profile <= 0 {
		return func() error { return nil }
	}
	seconds := strconv.Itoa(b.o.profile)
	apiServer := make(chan error, 1)
	go func() {
		raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", seconds).DoRaw(ctx)
		if err != nil {
			apiServer <- fmt.Errorf("profiling the API server: %w", err)
			return
		}
		apiServer <- b.saveProfile(name+"-apiserver.pprof", raw)
	}()
	op := make(chan error, 1)
	if operator {
		go func() {
			raw, err := b.operatorPprof(ctx, "profile?seconds="+seconds, time.Duration(b.o.profile)*time.Second)
			if err != nil {
				op <- fmt.Errorf("profiling the operator's CPU: %w", err)
				return
			}
			op <- b.saveProfile(name+"-operator-cpu.pprof", raw)
		}()
	} else {
		op <- nil
	}
	return func() error { return errors.Join(<-apiServer, <-op) }
}

// profileOperatorHeap records the operator's heap profile into
// out/<name>-operator-heap.pprof, for `go tool pprof -sample_index=inuse_space`:
// what its memory holds, and -sample_index=alloc_space: what it allocated
// since it started.
func (b *bench) profileOperatorHeap(ctx context.Context, name string) error {
	if b.o.profile <= 0 {
		return nil
	}
	raw, err := b.operatorPprof(ctx, "heap", 0)
	if err != nil {
		return fmt.Errorf("profiling the operator's heap: %w", err)
	}
	return b.saveProfile(name+"-operator-heap.pprof", raw)
}

// operatorPprof reads one of the operator's /debug/pprof endpoints.
// lasting is how long the endpoint takes to answer (a CPU profile's
// seconds), on top of the time the metrics client allows a scrape.
func (b *bench) operatorPprof(ctx context.Context, path string, lasting time.Duration) ([]byte, error) {
	client := *b.opMetrics.http
	client.Timeout += lasting
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+operatorPprofAddr+"/debug/pprof/"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, raw)
	}
	return raw, nil
}

// saveProfile writes a profile into the report's folder.
func (b *bench) saveProfile(file string, raw []byte) error {
	if err := os.MkdirAll(b.o.out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.o.out, file), raw, 0o644)
}
