package progress

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/muster-dev/muster/internal/testutil"
)

func TestPlainWritesALinePerChange(t *testing.T) {
	var out strings.Builder
	p := NewPlain(&out, clocktesting.NewFakeClock(time.Unix(0, 0)))
	p.Set("waiting for %s", "a")
	p.Set("waiting for %s", "a")
	p.Set("waiting for b")
	p.Done()
	if got, want := out.String(), "waiting for a\nwaiting for b\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTerminalSpins(t *testing.T) {
	var out testutil.SyncBuffer
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	p := NewTerminal(&out, clk)
	p.Set("waiting for pet")
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(1500 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "⠙ waiting for pet (1s)") {
		if time.Now().After(deadline) {
			t.Fatalf("no second frame: %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	p.Done()
	if !strings.HasPrefix(out.String(), "\r\x1b[K⠋ waiting for pet (0s)") || !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Errorf("got %q", out.String())
	}
}
