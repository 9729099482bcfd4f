package logs

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func writeLog(t *testing.T, path string, out, errOut string) *Writer {
	t.Helper()
	w, err := NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stdout.WriteString(out); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stderr.WriteString(errOut); err != nil {
		t.Fatal(err)
	}
	return w
}

func read(t *testing.T, path string, opts Options, done <-chan struct{}) string {
	t.Helper()
	rc, err := Open(context.Background(), path, opts, done)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	w := writeLog(t, path, "one\ntwo\nthree\nno newline", "")
	w.CloseChildEnds()
	<-w.Done()

	if got := read(t, path, Options{Tail: -1}, nil); got != "one\ntwo\nthree\nno newline" {
		t.Errorf("all = %q", got)
	}
	if got := read(t, path, Options{Tail: 2}, nil); got != "three\nno newline" {
		t.Errorf("tail 2 = %q", got)
	}
	if got := read(t, path, Options{Tail: -1, LimitBytes: 5}, nil); got != "one\nt" {
		t.Errorf("limit = %q", got)
	}
	ts := read(t, path, Options{Tail: 1, Timestamps: true}, nil)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\S+Z no newline$`).MatchString(ts) {
		t.Errorf("timestamps = %q", ts)
	}
	if got := read(t, path, Options{Tail: -1, Since: time.Now().Add(time.Hour)}, nil); got != "" {
		t.Errorf("since future = %q", got)
	}
	if got := Tail(path, 2, 8); got != " newline" {
		t.Errorf("Tail = %q", got)
	}
}

func TestStderrAndLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	long := strings.Repeat("x", maxLine+10)
	w := writeLog(t, path, long+"\n", "err\n")
	w.CloseChildEnds()
	<-w.Done()
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), " stderr F err\n") || !strings.Contains(string(raw), " stdout P ") {
		t.Errorf("raw log lacks stream tags:\n%.200s", raw)
	}
	got := read(t, path, Options{Tail: -1}, nil)
	if !strings.Contains(got, long+"\n") || !strings.Contains(got, "err\n") {
		t.Errorf("long line not reassembled (len %d)", len(got))
	}
	if got := read(t, path, Options{Tail: 1}, nil); got != "err\n" && got != long+"\n" {
		t.Errorf("tail 1 of partial records = %.40q", got)
	}
}

// The two streams are copied to the file each on its own, so a record of
// one can come between the partial records of the other's long line.
func TestPartialRecordsJoinPerStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	records := strings.Join([]string{
		"2026-01-01T00:00:00.000000001Z stdout P aaaa",
		"2026-01-01T00:00:00.000000002Z stderr F err",
		"2026-01-01T00:00:00.000000003Z stdout F bb",
		"2026-01-01T00:00:00.000000004Z stderr P unended",
		"2026-01-01T00:00:00.000000005Z stdout F last",
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(records), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, path, Options{Tail: -1}, nil), "err\naaaabb\nlast\nunended"; got != want {
		t.Errorf("all = %q, want %q", got, want)
	}
	if got, want := read(t, path, Options{Tail: 2}, nil), "last\nunended"; got != want {
		t.Errorf("tail 2 = %q, want %q", got, want)
	}
}

func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	w := writeLog(t, path, "first\n", "")
	time.Sleep(100 * time.Millisecond)
	rc, err := Open(context.Background(), path, Options{Tail: -1, Follow: true}, w.Done())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		if _, err := w.Stdout.WriteString("second\n"); err != nil {
			t.Error(err)
		}
		time.Sleep(300 * time.Millisecond)
		w.CloseChildEnds()
	}()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "first\nsecond\n" {
		t.Errorf("follow = %q", b)
	}
}
