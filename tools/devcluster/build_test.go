package devcluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A build that takes long says, every little while, that it is still
// going and for how long, and stops saying so once it is done.
func TestBuildsReportProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 20 * time.Millisecond
	var out syncBuffer
	c := &Config{Out: &out}
	path := filepath.Join(t.TempDir(), "tool")
	err := c.buildOnce(context.Background(), path, "tool v1", func(dst string) error {
		time.Sleep(110 * time.Millisecond)
		return os.WriteFile(dst, []byte("#!/bin/sh\n"), 0o755)
	})
	if err != nil {
		t.Fatal(err)
	}
	log := out.String()
	if n := strings.Count(log, "still building tool v1"); n < 3 {
		t.Fatalf("want progress lines while it builds, got %d:\n%s", n, log)
	}
	before := strings.Count(out.String(), "still building")
	time.Sleep(60 * time.Millisecond)
	if strings.Count(out.String(), "still building") != before {
		t.Fatal("no progress once the build is done")
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
