package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Jobs writing their pods at once share the operator's slots: never more
// writes in flight than it has, and every write made.
func TestPodWritesShareTheSlots(t *testing.T) {
	w := newPodWrites(3)
	var inFlight, most, made atomic.Int32
	// Each write is held until three have been in flight together: the
	// slots are used at once, not one by one.
	full := make(chan struct{})
	var fill sync.Once
	write := func(int) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if n == 3 {
			fill.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-time.After(10 * time.Second):
			t.Error("three writes were never in flight together")
		}
		inFlight.Add(-1)
		made.Add(1)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { w.each(context.Background(), 10, write) })
	}
	wg.Wait()
	if made.Load() != 50 {
		t.Errorf("made %d writes, want 50", made.Load())
	}
	if most.Load() > 3 {
		t.Errorf("%d writes were in flight at once, want at most 3", most.Load())
	}
}

// A write that waits for a slot gives up when its reconcile ends.
func TestPodWritesWaitingEndWithTheContext(t *testing.T) {
	w := newPodWrites(1)
	held := make(chan struct{})
	release := make(chan struct{})
	go w.each(context.Background(), 1, func(int) { close(held); <-release })
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ran := false
	go func() {
		w.each(ctx, 3, func(int) { ran = true })
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writes waiting for a slot did not end with their context")
	}
	close(release)
	if ran {
		t.Error("a write ran after its context ended, with no slot free")
	}
}

// Every pod write records how long it waited for a slot and how long the
// API server took with it, so a slow replacement says where its time went.
func TestPodWritesAreTimed(t *testing.T) {
	waits, releases := sampleCount(t, podWriteWaits), sampleCount(t, podWriteDurations.WithLabelValues("release"))
	newPodWrites(1).each(context.Background(), 3, func(int) {
		_ = timed("release", func() error { return nil })
	})
	// At least: other tests of the package may write pods meanwhile.
	if got := sampleCount(t, podWriteWaits) - waits; got < 3 {
		t.Errorf("slot waits recorded: %d, want 3", got)
	}
	if got := sampleCount(t, podWriteDurations.WithLabelValues("release")) - releases; got < 3 {
		t.Errorf("release durations recorded: %d, want 3", got)
	}
}

func sampleCount(t *testing.T, h prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
