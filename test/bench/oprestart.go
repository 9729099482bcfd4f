package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/tools/devcluster"
)

// operatorRestart is what an operator restart cost, with every pod of a
// scenario running: the time its next instance took to lead, and to have
// reconciled every job, and what every client wrote meanwhile.
type operatorRestart struct {
	leading, reconciled time.Duration
	reqs                requests
	// statusWrites are the job status writes the next instance made.
	statusWrites float64
}

// restartOperator stops the operator as an upgrade does, with SIGTERM (it
// hands its Lease back as it goes), and waits for the process node to run
// it again: for the next instance to hold the Lease, then to have
// reconciled each of the jobs at least once (its TrainingJob reconciles
// number jobs and its work queue is empty: the first list queues every job
// once), then for the writes to settle. A job whose pods all run and whose
// status says so needs no write.
func (b *bench) restartOperator(ctx context.Context, jobs int) (*operatorRestart, error) {
	leases := b.cs.CoordinationV1().Leases(devcluster.OperatorNamespace)
	lease, err := leases.Get(ctx, devcluster.OperatorLease, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	held := ""
	if lease.Spec.HolderIdentity != nil {
		held = *lease.Spec.HolderIdentity
	}
	before, err := scrapeAPI(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	old := b.operator
	b.logf("restarting the operator (SIGTERM to %d) with %d jobs running", old.pid, jobs)
	start := time.Now()
	if err := syscall.Kill(old.pid, syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("stopping the operator: %w", err)
	}
	out := &operatorRestart{}
	if err := b.nextOperator(ctx, old, held); err != nil {
		return nil, err
	}
	out.leading = time.Since(start)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := b.opMetrics.scrapeAll(ctx)
		if err != nil {
			return false, nil
		}
		depth, found := 0.0, false
		for k, v := range c {
			if strings.HasPrefix(k, "workqueue_depth{") && strings.Contains(k, `name="trainingjob"`) {
				depth, found = depth+v, true
			}
		}
		return found && depth == 0 && c.reconciles() >= float64(jobs), nil
	})
	if err != nil {
		return nil, fmt.Errorf("the operator's next instance did not reconcile every job: %w", err)
	}
	out.reconciled = time.Since(start)
	after, err := b.settle(ctx)
	if err != nil {
		return nil, err
	}
	out.reqs = after.requests.minus(before.requests)
	ops, err := b.opMetrics.scrape(ctx)
	if err != nil {
		return nil, err
	}
	out.statusWrites = ops[`muster_status_writes_total{result="ok"}`]
	b.logf("the operator leads again after %s, has reconciled every job after %s; %.0f writes meanwhile (%s)",
		out.leading.Round(time.Millisecond), out.reconciled.Round(time.Millisecond), out.reqs.writes(), describeWrites(out.reqs))
	return out, nil
}

// nextOperator waits for the operator's process after old, has the bench
// measure and scrape it from then on, and waits for it to take the Lease
// from held.
func (b *bench) nextOperator(ctx context.Context, old process, held string) error {
	var next process
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := operatorProcess()
		if err != nil || p.pid == old.pid {
			return false, nil
		}
		next = p
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the operator did not run again: %w", err)
	}
	b.operator, b.procs[operatorName] = next, next
	b.opMetrics.follow(next.pid)
	leases := b.cs.CoordinationV1().Leases(devcluster.OperatorNamespace)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, devcluster.OperatorLease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, nil
		}
		h := *l.Spec.HolderIdentity
		return h != "" && h != held, nil
	})
	if err != nil {
		return fmt.Errorf("the operator's next instance does not lead: %w", err)
	}
	return nil
}

// describeWrites lists writes by kind, for the log.
func describeWrites(r requests) string {
	var parts []string
	for _, k := range r.writeKinds() {
		parts = append(parts, k+" "+strconv.FormatFloat(r[k], 'f', 0, 64))
	}
	return strings.Join(parts, ", ")
}
