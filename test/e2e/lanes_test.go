package e2e

import (
	"context"
	"testing"

	"golang.org/x/sync/semaphore"
)

// Every test runs in parallel, in one of two lanes, by what it shares with
// the others: the fake GPU nodes (and the gang schedulers' and Kueue's
// queues on them), or the host's cores (real processes on the process
// node). The lanes run side by side, so the suite takes about as long as
// its longer lane rather than the sum of its tests: most tests spend
// their time waiting for pods to run for a set time, not computing.
//
// Within a lane a test is alone (exclusive: it needs every fake GPU, or
// its torch keeps both cores busy) or shares the lane with at most
// laneWidth-1 others (shared). A lane is first come, first served: a test
// waiting to be alone is not overtaken by shared ones.
type lane struct{ sem *semaphore.Weighted }

// laneWidth is how many shared tests a lane runs at once: what the suite
// ran before the lanes (go test's -parallel of 2 cores).
const laneWidth = 2

var (
	// fakeNodes is the lane of tests placing pods on the fake GPU nodes.
	fakeNodes = lane{semaphore.NewWeighted(laneWidth)}
	// hostCPU is the lane of tests running real processes.
	hostCPU = lane{semaphore.NewWeighted(laneWidth)}
)

// exclusive runs the test in parallel with the other lane, alone in its
// own.
func (l lane) exclusive(t *testing.T) { l.take(t, laneWidth) }

// shared runs the test in parallel with the other lane and with at most
// laneWidth-1 shared tests of its own.
func (l lane) shared(t *testing.T) { l.take(t, 1) }

func (l lane) take(t *testing.T, n int64) {
	t.Helper()
	t.Parallel()
	if err := l.sem.Acquire(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: the lane is held until the test's
	// own cleanups (its namespace, its jobs) have run.
	t.Cleanup(func() { l.sem.Release(n) })
}
