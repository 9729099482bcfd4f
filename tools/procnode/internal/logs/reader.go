package logs

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"slices"
	"time"
)

// Options mirror the kubelet's log query parameters.
type Options struct {
	Tail       int // number of lines from the end; <0 means all
	LimitBytes int // 0 means unlimited
	Timestamps bool
	Since      time.Time // zero means from the start
	Follow     bool
}

// record is one parsed line of a log file.
type record struct {
	ts      time.Time
	tsText  string
	stream  string
	text    []byte
	partial bool
}

func parse(line []byte) (record, bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	fields := bytes.SplitN(line, []byte(" "), 4)
	if len(fields) < 3 {
		return record{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return record{}, false
	}
	r := record{ts: ts, tsText: string(fields[0]), stream: string(fields[1]), partial: string(fields[2]) == "P"}
	if len(fields) == 4 {
		r.text = fields[3]
	}
	return r, true
}

// render writes a record as the user sees it: the text, a newline for full
// lines, and with Timestamps the record's time in front of each line start.
func render(dst *bytes.Buffer, r record, opts Options, lineStart bool) {
	if opts.Timestamps && lineStart {
		dst.WriteString(r.tsText + " ")
	}
	dst.Write(r.text)
	if !r.partial {
		dst.WriteByte('\n')
	}
}

// snapshot renders the whole file honouring Since and Tail, and returns the
// file offset it read up to (for following).
func snapshot(path string, opts Options) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	var lines [][]record // records grouped into user-visible lines
	// A long line's partial records are joined per stream: the other
	// stream's records can come between them, since each stream is copied
	// to the file on its own.
	open := map[string][]record{}
	br := bufio.NewReader(f)
	var off int64
	for {
		raw, err := br.ReadBytes('\n')
		if len(raw) > 0 && raw[len(raw)-1] == '\n' {
			off += int64(len(raw))
			if r, ok := parse(raw); ok && (opts.Since.IsZero() || !r.ts.Before(opts.Since)) {
				cur := append(open[r.stream], r)
				if r.partial {
					open[r.stream] = cur
				} else {
					delete(open, r.stream)
					lines = append(lines, cur)
				}
			}
		}
		if err != nil {
			break // an incomplete trailing line is left for the follower
		}
	}
	// Lines not ended yet, by when they began: the process may still be
	// writing them, or ended without a newline.
	unended := slices.Collect(maps.Values(open))
	slices.SortStableFunc(unended, func(a, b []record) int { return a[0].ts.Compare(b[0].ts) })
	lines = append(lines, unended...)
	if opts.Tail >= 0 && len(lines) > opts.Tail {
		lines = lines[len(lines)-opts.Tail:]
	}
	var out bytes.Buffer
	for _, l := range lines {
		for i, r := range l {
			render(&out, r, opts, i == 0)
		}
	}
	return out.Bytes(), off, nil
}

// Tail returns the end of a log file as plain text, at most maxLines lines
// and maxBytes bytes; used for FallbackToLogsOnError messages.
func Tail(path string, maxLines, maxBytes int) string {
	b, _, err := snapshot(path, Options{Tail: maxLines})
	if err != nil {
		return ""
	}
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	return string(b)
}

// Open returns the log stream of one container attempt. When following,
// done must be closed once the attempt's writer has finished; the stream then
// ends after the last bytes are sent. A nil done means nothing writes
// the file any more.
func Open(ctx context.Context, path string, opts Options, done <-chan struct{}) (io.ReadCloser, error) {
	first, off, err := snapshot(path, opts)
	if err != nil {
		return nil, err
	}
	if !opts.Follow || done == nil {
		return io.NopCloser(limit(bytes.NewReader(first), opts.LimitBytes)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(follow(ctx, path, off, first, opts, done, pw))
	}()
	return struct {
		io.Reader
		io.Closer
	}{limit(pr, opts.LimitBytes), pr}, nil
}

func limit(r io.Reader, n int) io.Reader {
	if n > 0 {
		return io.LimitReader(r, int64(n))
	}
	return r
}

func follow(ctx context.Context, path string, off int64, first []byte, opts Options, done <-chan struct{}, w io.Writer) error {
	if _, err := w.Write(first); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReader(f)
	var pending []byte
	lineStart := len(first) == 0 || first[len(first)-1] == '\n'
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		finished := false
		select {
		case <-done:
			finished = true
		default:
		}
		for {
			raw, err := br.ReadBytes('\n')
			pending = append(pending, raw...)
			if err != nil {
				break
			}
			if r, ok := parse(pending); ok && (opts.Since.IsZero() || !r.ts.Before(opts.Since)) {
				var out bytes.Buffer
				render(&out, r, opts, lineStart)
				lineStart = !r.partial
				if _, err := w.Write(out.Bytes()); err != nil {
					return err
				}
			}
			pending = nil
		}
		if finished {
			return nil // done was closed before this last read, so all is sent
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-done:
		}
	}
}
