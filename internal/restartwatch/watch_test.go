package restartwatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// write replaces the file as the kubelet does: a new file renamed over.
func write(t *testing.T, path, value string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func watch(ctx context.Context, path, started string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, path, started, 5*time.Millisecond, func(string, ...any) {}) }()
	return done
}

// stillWatching fails if the watcher returned within a short while: it
// must keep watching.
func stillWatching(t *testing.T, done <-chan error, why string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("returned %v %s", err, why)
	case <-time.After(50 * time.Millisecond):
	}
}

// asksForARestart fails unless the watcher soon returns ErrRestart.
func asksForARestart(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, ErrRestart) {
			t.Fatalf("got %v, want ErrRestart", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no restart asked once the file said so")
	}
}

func TestTheWatcherAsksForARestartWhenTheValueChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restarts")
	write(t, path, "2")
	done := watch(t.Context(), path, "2")
	stillWatching(t, done, "before the value changed")
	write(t, path, "3\n")
	asksForARestart(t, done)
}

func TestTheWatcherOutlivesAMissingOrEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restarts")
	// Started before the annotation was set: the variable was empty.
	done := watch(t.Context(), path, "")
	stillWatching(t, done, "for a missing file")
	write(t, path, "")
	stillWatching(t, done, "for an empty file")
	write(t, path, "1")
	asksForARestart(t, done)
}

func TestAStoppedWatcherAsksForNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restarts")
	write(t, path, "1")
	ctx, cancel := context.WithCancel(t.Context())
	done := watch(ctx, path, "1")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a stopped watcher returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop")
	}
}

// The operator only raises the value: a lower one is a late or replayed
// write (a plan made from a job a write behind), and restarting for it
// would restart the pod once more, uncounted.
func TestTheWatcherAsksOnlyForAHigherValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restarts")
	write(t, path, "3")
	done := watch(t.Context(), path, "3")
	write(t, path, "2")
	stillWatching(t, done, "for a lower value")
	write(t, path, "4")
	asksForARestart(t, done)
}
