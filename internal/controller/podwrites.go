package controller

import (
	"context"
	"time"

	"golang.org/x/sync/semaphore"
	"k8s.io/client-go/util/workqueue"
)

// podWrites are the operator's pod creates, deletes and finalizer releases
// in flight, over all the jobs it reconciles at once. A plain client that
// makes a cluster's pods keeps a few dozen requests in flight; fifty jobs
// each making their pods at once would keep hundreds, and the API server
// holds a seat of its priority level for each one it serves. Those are
// seats the other levels could have borrowed: the scheduler's binds, queued
// behind a full level, are refused (429) and its pods sent to back off.
// Capped, the jobs take turns in the order they asked (the semaphore is
// first come, first served), so the first jobs asked for are the first to
// have all their pods, as with the plain client, instead of every job
// getting its last pod late.
type podWrites struct {
	slots   *semaphore.Weighted
	workers int
}

func newPodWrites(n int) *podWrites {
	return &podWrites{slots: semaphore.NewWeighted(int64(n)), workers: n}
}

// each runs write for 0..n-1, as many at once as there are free slots. A
// write whose turn never comes because ctx ended is not made.
func (w *podWrites) each(ctx context.Context, n int, write func(i int)) {
	workqueue.ParallelizeUntil(ctx, w.workers, n, func(i int) {
		asked := time.Now()
		if err := w.slots.Acquire(ctx, 1); err != nil {
			return
		}
		podWriteWaits.Observe(time.Since(asked).Seconds())
		defer w.slots.Release(1)
		write(i)
	})
}

// timed runs one pod write, and records how long the API server took with
// it under action.
func timed(action string, write func() error) error {
	start := time.Now()
	err := write()
	podWriteDurations.WithLabelValues(action).Observe(time.Since(start).Seconds())
	return err
}
