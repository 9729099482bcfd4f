package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/test/framework"
)

// leaseName is the operator's leader election Lease.
const leaseName = framework.OperatorLease

// takeoverGoal is how soon after the leader's death the standby must lead.
// The standby tries every retry period (2 s) plus a jitter of up to 1.2
// times it, so up to 4.4 s apart: it sees the leader's last renewal up to
// 4.4 s after it was made, counts the lease (15 s) from then, and takes the
// expired lease at its next try, up to 4.4 s later: 23.8 s at worst, and
// a second for the API writes and this test's poll.
const takeoverGoal = 25 * time.Second

// TestLeaderKilledMidJob runs two elected replicas, as the manifests do,
// and SIGKILLs the leader while the scenarios run: it never releases its
// lease. The standby must lead within takeoverGoal, and every job must end
// as undisturbed, with no pod made twice.
func TestLeaderKilledMidJob(t *testing.T) {
	want := undisturbed(t)
	ns := namespace(t, "chaos-leader")
	m := startMonitor(t, ns)
	elect := []string{"--leader-elect=true", "--leader-election-namespace=" + ns}
	leader := startOperator(t, "", elect...)
	first, err := waitHolder(ns, "")
	if err != nil {
		t.Fatal(err)
	}
	standby := startOperator(t, "", elect...)
	d := &driver{ctx: context.Background(), ns: ns}

	type takeover struct {
		after time.Duration
		err   error
	}
	took := make(chan takeover, 1)
	go func() {
		time.Sleep(3 * time.Second)
		leader.kill()
		killed := time.Now()
		_, err := waitHolder(ns, first)
		took <- takeover{time.Since(killed), err}
	}()
	got := runRound(t, d, m, "leader")
	tk := <-took
	if tk.err != nil {
		t.Fatal(tk.err)
	}
	t.Logf("the standby led %s after the leader was killed", tk.after.Round(100*time.Millisecond))
	if tk.after > takeoverGoal {
		t.Errorf("the standby took %s to lead, want at most %s", tk.after, takeoverGoal)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the jobs ended differently from the undisturbed run (-want +got):\n%s", diff)
	}
	m.check(t)
	for _, op := range []*operator{leader, standby} {
		for _, c := range op.crashed() {
			t.Error("operator crashed:", c)
		}
	}
}

// waitHolder waits until the lease has a holder other than not, and
// returns it.
func waitHolder(ns, not string) (string, error) {
	var holder string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var lease coordinationv1.Lease
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: leaseName}, &lease); err != nil {
			return false, nil //nolint:nilerr // not created yet
		}
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return holder != "" && holder != not, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for a leader other than %q: %w (holder %q)", not, err, holder)
	}
	return holder, nil
}

// releaseGoal bounds the handover after a clean stop, the leader's own
// shutdown included: it releases its lease as it stops, so the standby
// need not wait the lease out (15 s, then a 2 s retry period).
const releaseGoal = 10 * time.Second

// TestLeaderStoppedCleanlyHandsOverAtOnce stops the leader with SIGTERM,
// as a rolling update or a drained node does: it releases its lease, and
// the standby leads well before the lease would have expired.
func TestLeaderStoppedCleanlyHandsOverAtOnce(t *testing.T) {
	ns := namespace(t, "chaos-handover")
	elect := []string{"--leader-elect=true", "--leader-election-namespace=" + ns}
	leader := startOperator(t, "", elect...)
	first, err := waitHolder(ns, "")
	if err != nil {
		t.Fatal(err)
	}
	standby := startOperator(t, "", elect...)
	stopped := time.Now()
	leader.stop()
	if _, err := waitHolder(ns, first); err != nil {
		t.Fatal(err)
	}
	took := time.Since(stopped)
	t.Logf("the standby led %s after the leader was stopped", took.Round(100*time.Millisecond))
	if took > releaseGoal {
		t.Errorf("the handover took %s: the stopped leader did not release its lease", took)
	}
	for _, c := range append(leader.crashed(), standby.crashed()...) {
		t.Error("operator crashed:", c)
	}
}

// TestPausedLeaderDoesNotAct pauses the leader (SIGSTOP) right after it
// decided to act on a failed pod, past its lease, while the standby takes
// over and replaces the pod; then wakes it with the view it was paused
// with (its watches deliver nothing newer). The old leader must not write
// again: its writes are fenced by its last renewal (internal/leader), and
// it stops once it sees the lease lost. The failure is counted once.
//
// The old leader talks through a proxy that holds its writes from just
// before the failure (so that its decision to act shows, and does not
// land), fails them while it is paused, and counts every write that
// reaches it after it wakes.
func TestPausedLeaderDoesNotAct(t *testing.T) {
	ns := namespace(t, "chaos-pause")
	m := startMonitor(t, ns)
	d := &driver{ctx: context.Background(), ns: ns}
	gate := &pauseGate{}
	kubeconfig, _ := faultProxy(t, faults{pause: gate})
	elect := []string{"--leader-elect=true", "--leader-election-namespace=" + ns}
	old := startOperator(t, kubeconfig, elect...)
	first, err := waitHolder(ns, "")
	if err != nil {
		t.Fatal(err)
	}
	standby := startOperator(t, "", elect...)

	const name = "paused"
	if err := d.create(d.job(name).Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(5)); err != nil {
		t.Fatal(err)
	}
	pods, err := d.waitRunning(name, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	gate.holdWrites()
	failed := pods[0]
	if err := d.exit(failed, 1); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(d.ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return gate.heldWrites() > 0, nil
	}); err != nil {
		t.Fatalf("the leader never tried to act on the failed pod: %v", err)
	}
	gate.holdWatches()
	if err := old.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	gate.drop()
	if _, err := waitHolder(ns, first); err != nil {
		t.Fatal(err)
	}
	if _, err := d.waitRunning(name, 2, func(p corev1.Pod) bool { return p.UID != failed.UID }); err != nil {
		t.Fatal(err)
	}
	gate.count()
	exited := old.mayExit()
	if err := old.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Error("the woken leader did not stop within a minute of losing its lease")
	}
	if w := gate.countedWrites(); len(w) > 0 {
		t.Errorf("the woken leader wrote %d times after losing its lease: %v", len(w), w)
	}
	job, err := d.finishAll(name, 2, musterv1.PhaseSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(job); o.Restarts != 1 || o.TaskRestarts != 1 {
		t.Errorf("want the failure counted once; got %+v", o)
	}
	m.check(t)
	for _, c := range standby.crashed() {
		t.Error("operator crashed:", c)
	}
}
