package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// watchLag is how far the operator's view trails the truth behind a
// lagging proxy.
const watchLag = 2 * time.Second

// TestLaggingJobWatch holds back every event of the operator's TrainingJob
// watch by watchLag, while pod events pass at once: the operator's job
// cache lags its pod cache, as it does on a loaded API server. Every job
// must still end as undisturbed, and no pod of a suspended or finished job
// may come back.
func TestLaggingJobWatch(t *testing.T) {
	want := undisturbed(t)
	ns := namespace(t, "chaos-lag")
	m := startMonitor(t, ns)
	d := &driver{ctx: context.Background(), ns: ns}

	kubeconfig, stats := faultProxy(t, faults{lag: map[string]time.Duration{"trainingjobs": watchLag}})
	op := startOperator(t, kubeconfig)
	got := runRound(t, d, m, "lag")
	if stats.delayed.Load() == 0 {
		t.Error("the proxy held back no job event: the test did not test a lagging watch")
	}
	endsAsUndisturbed(t, want, got, "lag", m, op)
}

// TestRestartsBehindAStalePodCache kills the operator again and again
// while its pod cache starts each time watchLag behind the store (a stale
// list, then a lagging watch) and its job cache does not: the status it
// reads may count ends its pod cache has not seen yet, and show running
// the pods the cache still shows ended. Every end must be counted once and
// none of a running pod (issue: phantom restarts after an operator start).
func TestRestartsBehindAStalePodCache(t *testing.T) {
	want := undisturbed(t)
	ns := namespace(t, "chaos-stale")
	m := startMonitor(t, ns)
	d := &driver{ctx: context.Background(), ns: ns}

	kubeconfig, stats := faultProxy(t, faults{lag: map[string]time.Duration{"pods": watchLag}, stalePods: watchLag})
	op := startOperatorEnv(t, []string{"KUBE_FEATURE_WatchListClient=false"}, kubeconfig)
	stopKilling := op.killEvery(t, rand.New(rand.NewPCG(seed, 2)), 2*time.Second, 6*time.Second)
	got := runRound(t, d, m, "stale")
	stopKilling()
	t.Logf("operator killed %d times; %d stale pod lists served (seed %d)", op.killCount(), stats.staleLists.Load(), seed)
	if stats.staleLists.Load() < 2 {
		t.Errorf("the proxy served %d stale pod lists: the test did not start operators behind", stats.staleLists.Load())
	}
	endsAsUndisturbed(t, want, got, "stale", m, op)
}

// TestStatusWritesFail fails one in four of the operator's status writes
// with a server error, half of them after the write landed (the operator
// cannot tell which): the job's accounting must come out as undisturbed.
func TestStatusWritesFail(t *testing.T) {
	want := undisturbed(t)
	ns := namespace(t, "chaos-status")
	m := startMonitor(t, ns)
	d := &driver{ctx: context.Background(), ns: ns}

	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(seed, 3))
	kubeconfig, stats := faultProxy(t, faults{failStatus: func() (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		return rnd.IntN(4) == 0, rnd.IntN(2) == 0
	}})
	op := startOperator(t, kubeconfig)
	got := runRound(t, d, m, "status")
	t.Logf("%d status writes failed (seed %d)", stats.failedWrites.Load(), seed)
	if stats.failedWrites.Load() == 0 {
		t.Error("no status write failed: the test did not test failing writes")
	}
	endsAsUndisturbed(t, want, got, "status", m, op)
}

// endsAsUndisturbed checks that every job ended as in the undisturbed
// run, that the invariants held, and that the operator never crashed.
func endsAsUndisturbed(t *testing.T, want, got map[string]outcome, suffix string, m *monitor, ops ...*operator) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the jobs ended differently from the undisturbed run (-want +got):\n%s", diff)
		for _, s := range scenarios {
			if want[s.name] != got[s.name] {
				job := s.name + "-" + suffix
				t.Logf("pods of %s:\n%s", job, m.History(job))
				for _, op := range ops {
					t.Logf("operator log on %s:\n%s", job, grepFile(op.logPath, job))
				}
			}
		}
	}
	m.check(t)
	for _, op := range ops {
		for _, c := range op.crashed() {
			t.Error("operator crashed:", c)
		}
	}
}
