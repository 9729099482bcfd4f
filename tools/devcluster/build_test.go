package devcluster

import (
	"bytes"
	"context"
	"fmt"
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
	// The build lasts until it has been reported three times, however
	// slowly a loaded machine runs the reporter.
	err := c.buildOnce(context.Background(), path, "tool v1", func(dst string) error {
		for deadline := time.Now().Add(10 * time.Second); strings.Count(out.String(), "still building tool v1") < 3; {
			if time.Now().After(deadline) {
				return fmt.Errorf("want progress lines while it builds, got:\n%s", out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		return os.WriteFile(dst, []byte("#!/bin/sh\n"), 0o755)
	})
	if err != nil {
		t.Fatal(err)
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
