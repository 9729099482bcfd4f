package main

import (
	"os"
	"path/filepath"
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/restartwatch"
)

func TestTheRestartWatcherExitsWithTheRestartCodeWhenAsked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restarts")
	if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Started when the annotation said 0; the file says 1 already.
	t.Setenv(musterv1.EnvInPlaceRestarts, "0")
	if got := runRestartWatcher([]string{"--file", path, "--interval", "10ms"}); got != restartwatch.ExitCode {
		t.Fatalf("exit code %d, want %d", got, restartwatch.ExitCode)
	}
}

func TestTheRestartWatcherKeepsTheValueItActedOn(t *testing.T) {
	dir := t.TempDir()
	path, state := filepath.Join(dir, "restarts"), filepath.Join(dir, "acted")
	if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(musterv1.EnvInPlaceRestarts, "0")
	if got := runRestartWatcher([]string{"--file", path, "--state", state, "--interval", "10ms"}); got != restartwatch.ExitCode {
		t.Fatalf("exit code %d, want %d", got, restartwatch.ExitCode)
	}
	if kept, err := os.ReadFile(state); err != nil || string(kept) != "1" {
		t.Fatalf("kept %q (%v), want 1", kept, err)
	}
}

func TestTheRestartWatcherRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"--file", "x", "--interval", "0s"}, {"--nope"}} {
		if got := runRestartWatcher(args); got != 2 {
			t.Errorf("%q: exit code %d, want 2", args, got)
		}
	}
}
