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
	return watchKeeping(ctx, path, "", started)
}

// watchKeeping is watch with the value acted on kept in state.
func watchKeeping(ctx context.Context, path, state, started string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, path, state, started, 5*time.Millisecond, func(string, ...any) {}) }()
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

// A watcher that exits for a reason of its own after an ask landed, before
// it read it, is started again by the kubelet with the environment read
// anew, which then says the asked value: compared with that, it would
// never ask. It compares with the value it kept instead.
func TestAWatcherRestartedAloneAsksWhatItHadNotActedOn(t *testing.T) {
	dir := t.TempDir()
	path, state := filepath.Join(dir, "restarts"), filepath.Join(dir, "state", "acted")
	if err := os.Mkdir(filepath.Dir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	logf := func(string, ...any) {}
	write(t, path, "1")
	if got := Start(state, "1", logf); got != "1" {
		t.Fatalf("first start from %q, want the environment's 1", got)
	}
	// The ask lands; the watcher exits before it reads it (a crash, an OOM
	// kill) and comes back with the environment saying 2.
	write(t, path, "2")
	started := Start(state, "2", logf)
	if started != "1" {
		t.Fatalf("restarted alone, it starts from %q, want the kept 1", started)
	}
	asksForARestart(t, watchKeeping(t.Context(), path, state, started))
	// Every container restarts, the watcher with them: it acted on 2 and
	// asks nothing more.
	started = Start(state, "2", logf)
	if started != "2" {
		t.Fatalf("after the restart it asked for, it starts from %q, want 2", started)
	}
	stillWatching(t, watchKeeping(t.Context(), path, state, started), "for the value it acted on")
}

func TestAWatcherThatCannotKeepItsValueStartsFromItsEnvironment(t *testing.T) {
	state := filepath.Join(t.TempDir(), "no-such-dir", "acted")
	if got := Start(state, " 3\n", func(string, ...any) {}); got != "3" {
		t.Fatalf("started from %q, want 3", got)
	}
	if got := Start("", "4", func(string, ...any) {}); got != "4" {
		t.Fatalf("without a state, started from %q, want 4", got)
	}
}

// A kept value that is not a number (an empty file, say) is not taken
// for the one acted on: compared with it, any value would ask.
func TestAKeptValueThatIsNotANumberIsNotTrusted(t *testing.T) {
	state := filepath.Join(t.TempDir(), "acted")
	write(t, state, "")
	logf := func(string, ...any) {}
	if got := Start(state, "2", logf); got != "2" {
		t.Fatalf("started from %q, want the environment's 2", got)
	}
	if kept, err := os.ReadFile(state); err != nil || string(kept) != "2" {
		t.Errorf("kept %q (%v), want 2 in place of what was not a number", kept, err)
	}
	// An empty environment (an annotation not set yet) keeps nothing.
	empty := filepath.Join(t.TempDir(), "acted")
	if got := Start(empty, "", logf); got != "" {
		t.Fatalf("started from %q, want empty", got)
	}
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty value was kept: %v", err)
	}
}
