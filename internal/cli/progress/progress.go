// Package progress shows what a command waits for: a spinner line that
// rewrites itself when stdout is a terminal, plain lines (one per change,
// on stderr) when it is not, so that logs and pipes get readable text and
// stdout keeps only the command's result.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/clock"
)

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Interval is how often the spinner turns.
const Interval = 100 * time.Millisecond

// Progress is one waiting command's display.
type Progress struct {
	out      io.Writer
	terminal bool
	clock    clock.WithTicker

	mu      sync.Mutex
	msg     string
	frame   int
	started time.Time
	stop    chan struct{}
	done    chan struct{}
}

// New shows progress for streams: the spinner on Out when it is a
// terminal, plain lines on ErrOut otherwise.
func New(streams genericiooptions.IOStreams, clk clock.WithTicker) *Progress {
	if printers.IsTerminal(streams.Out) {
		return NewTerminal(streams.Out, clk)
	}
	return NewPlain(streams.ErrOut, clk)
}

// NewTerminal shows a spinner on out.
func NewTerminal(out io.Writer, clk clock.WithTicker) *Progress {
	return &Progress{out: out, terminal: true, clock: clk}
}

// NewPlain writes a line to out each time what is awaited changes.
func NewPlain(out io.Writer, clk clock.WithTicker) *Progress {
	return &Progress{out: out, clock: clk}
}

// Set says what the command waits for now.
func (p *Progress) Set(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == p.msg {
		return
	}
	p.msg = msg
	if !p.terminal {
		fmt.Fprintln(p.out, msg)
		return
	}
	if p.stop == nil {
		p.started = p.clock.Now()
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.spin(p.stop, p.done)
	}
	p.render()
}

func (p *Progress) spin(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := p.clock.NewTicker(Interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			p.mu.Lock()
			p.frame = (p.frame + 1) % len(frames)
			p.render()
			p.mu.Unlock()
		}
	}
}

// render rewrites the spinner line: the frame, the message and how long it
// has waited. The caller holds mu.
func (p *Progress) render() {
	elapsed := p.clock.Since(p.started).Truncate(time.Second)
	fmt.Fprintf(p.out, "\r\x1b[K%s %s (%s)", frames[p.frame], p.msg, elapsed)
}

// Done ends the display; on a terminal it clears the spinner line, so that
// the command's result takes its place.
func (p *Progress) Done() {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
		fmt.Fprint(p.out, "\r\x1b[K")
	}
}
