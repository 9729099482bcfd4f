package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// minKills is how many times the operator must be killed mid-flight.
const minKills = 50

// TestOperatorSurvivesKills SIGKILLs the operator at seeded random points,
// at least minKills times, while jobs are replaced, gang-restarted,
// rescaled, suspended, completed and failed, and starts it again each
// time. Every job must end as the same job ends in an undisturbed run, and
// the invariants must hold throughout.
func TestOperatorSurvivesKills(t *testing.T) {
	want := undisturbed(t)
	t.Logf("undisturbed run: %+v", want)
	ns := namespace(t, "chaos-kill")
	m := startMonitor(t, ns)
	op := startOperator(t, "")
	d := &driver{ctx: context.Background(), ns: ns}

	stopKilling := op.killEvery(t, rand.New(rand.NewPCG(seed, 1)), 200*time.Millisecond, 3*time.Second)
	deadline := time.Now().Add(10 * time.Minute)
	for round := 1; op.killCount() < minKills; round++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d kills in %d rounds", op.killCount(), round-1)
		}
		got := runRound(t, d, m, fmt.Sprintf("r%d", round))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round %d (%d kills so far) ended differently from the undisturbed run (-want +got):\n%s", round, op.killCount(), diff)
			for _, s := range scenarios {
				if want[s.name] != got[s.name] {
					job := fmt.Sprintf("%s-r%d", s.name, round)
					t.Logf("pods of %s:\n%s", job, m.History(job))
					t.Logf("operator log on %s:\n%s", job, grepFile(op.logPath, job))
				}
			}
		}
		if t.Failed() {
			break
		}
	}
	stopKilling()
	t.Logf("operator killed %d times (seed %d)", op.killCount(), seed)
	m.check(t)
	for _, c := range op.crashed() {
		t.Error("operator crashed:", c)
	}
}

// runRound runs every scenario at once, each with its own job, and
// returns how each ended.
func runRound(t *testing.T, d *driver, m *monitor, suffix string) map[string]outcome {
	t.Helper()
	var mu sync.Mutex
	got := map[string]outcome{}
	var wg sync.WaitGroup
	for _, s := range scenarios {
		wg.Go(func() {
			job, err := s.run(d, s.name+"-"+suffix)
			if err != nil {
				t.Errorf("%s: %v", s.name, err)
				return
			}
			o := outcomeOf(job)
			o.Pods = m.PodsCreated(job.Name)
			mu.Lock()
			got[s.name] = o
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}
