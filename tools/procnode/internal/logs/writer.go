// Package logs records container output in the CRI log format
// ("<RFC3339Nano> <stdout|stderr> <F|P> <text>") so that timestamps and
// streams survive, and serves it back the way the kubelet's /containerLogs
// endpoint does (tail, follow, limitBytes, since, timestamps).
package logs

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"sync"
	"time"
)

const maxLine = 16 * 1024 // longer lines are split into partial (P) records

// Writer captures one container attempt's stdout and stderr into a file.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	done chan struct{}
	// Stdout and Stderr are the write ends to hand to the child process.
	Stdout, Stderr *os.File
}

// NewWriter creates the log file (appending if it exists) and the pipes.
func NewWriter(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, err
	}
	or, ow, err := os.Pipe()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		_ = f.Close()
		_ = or.Close()
		_ = ow.Close()
		return nil, err
	}
	w := &Writer{f: f, done: make(chan struct{}), Stdout: ow, Stderr: ew}
	var wg sync.WaitGroup
	wg.Add(2)
	go w.copy(&wg, or, "stdout")
	go w.copy(&wg, er, "stderr")
	go func() {
		wg.Wait()
		// Like a failed write, a failed close has no one to be reported to:
		// the container's output is recorded on a best-effort basis.
		_ = f.Close()
		close(w.done)
	}()
	return w, nil
}

// CloseChildEnds closes the node's copies of the write ends once the child
// has them, so the readers see EOF when the child's process group is gone.
func (w *Writer) CloseChildEnds() {
	_ = w.Stdout.Close()
	_ = w.Stderr.Close()
}

// Done is closed when both streams reached EOF and the file is closed.
func (w *Writer) Done() <-chan struct{} { return w.done }

// Note appends a line as if the container had written it to stderr; used
// for messages from the node itself (e.g. a command that cannot start).
func (w *Writer) Note(text string) {
	w.write("stderr", []byte(text+"\n"))
}

func (w *Writer) copy(wg *sync.WaitGroup, r *os.File, stream string) {
	defer wg.Done()
	defer func() { _ = r.Close() }()
	br := bufio.NewReaderSize(r, maxLine)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			w.write(stream, chunk)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func (w *Writer) write(stream string, chunk []byte) {
	tag := "P"
	if bytes.HasSuffix(chunk, []byte("\n")) {
		tag = "F"
		chunk = chunk[:len(chunk)-1]
	}
	var b bytes.Buffer
	b.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
	b.WriteString(" " + stream + " " + tag + " ")
	b.Write(chunk)
	b.WriteByte('\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.done:
		return
	default:
	}
	_, _ = w.f.Write(b.Bytes())
}
