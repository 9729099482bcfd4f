package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Two replicas, as config/manager runs them: only the elected one acts;
// when it dies without a word (no lease released, as after SIGKILL), the
// standby leads once the lease (15 s, controller-runtime's default, which
// the binary keeps) runs out and picks the jobs up where the status
// says they are. Nothing is done twice.
func TestStandbyTakesOverFromAKilledLeader(t *testing.T) {
	e := newEnv(t)
	e.replaceOperator()

	// acts counts each replica's writes to the test's namespace through its
	// client (leader election takes its lease with a client of its own).
	var actsA, actsB atomic.Int32
	replica := func(acts *atomic.Int32, releaseOnCancel bool) *runningOperator {
		count := interceptWrites(e.ns, func(client.Object) error {
			acts.Add(1)
			return nil
		})
		op, err := startOperatorWith(func(o *ctrl.Options) {
			count(o)
			o.LeaderElection = true
			o.LeaderElectionID = "muster-operator-" + e.ns
			o.LeaderElectionNamespace = e.ns
			o.LeaderElectionReleaseOnCancel = releaseOnCancel
		})
		e.g.Expect(err).NotTo(gomega.HaveOccurred())
		return op
	}
	leader := replica(&actsA, false)
	e.create(e.job("first").Role("worker", 2).Obj())
	e.waitPodCount("first", 2)
	standby := replica(&actsB, true)
	defer standby.stop()

	e.runAll("first", 2)
	e.waitPhase("first", musterv1.PhaseRunning)
	e.g.Consistently(actsB.Load, 2*time.Second, 100*time.Millisecond).Should(gomega.BeZero(), "the standby acts on nothing while the leader lives")

	leader.stop() // no lease released: the standby must wait it out
	killed := time.Now()
	ledBy := actsA.Load()
	e.create(e.job("second").Role("worker", 1).Obj())
	e.g.Eventually(func() []string { return podNames(e.pods("second")) }, 45*time.Second, interval).
		Should(gomega.ConsistOf("second-worker-0"), "the standby creates the new job's pod")
	// The lease (15 s) and two of the standby's tries (up to 4.4 s apart,
	// see takeoverGoal in test/chaos) bound the wait; the rest is the
	// new leader starting its controllers, slower under the race detector
	// on a busy machine. How fast it is belongs to the benchmarks: here,
	// only that it comes once the lease runs out, not after a restart
	// back-off.
	took := time.Since(killed)
	t.Logf("the standby acted %s after the leader was killed", took.Round(100*time.Millisecond))
	e.g.Expect(took).To(gomega.BeNumerically("<", 35*time.Second))
	e.g.Expect(actsA.Load()).To(gomega.Equal(ledBy), "the killed leader did nothing more")

	// The first job's decisions carry over: same pods, no restart.
	got := e.get("first")
	e.g.Expect(got.Status.Restarts.Total).To(gomega.BeZero())
	e.g.Expect(e.pods("first")).To(gomega.HaveLen(2))
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
