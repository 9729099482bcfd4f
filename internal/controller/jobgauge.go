package controller

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// jobPhases are the values of muster_jobs's phase label: every phase, so
// a phase with no job reports 0 rather than no series.
var jobPhases = []musterv1.JobPhase{
	musterv1.PhasePending, musterv1.PhaseRunning, musterv1.PhaseRestarting,
	musterv1.PhaseSuspended, musterv1.PhaseSucceeded, musterv1.PhaseFailed,
}

// jobListTimeout bounds the cache read of one scrape.
const jobListTimeout = 5 * time.Second

var jobsDesc = prometheus.NewDesc("muster_jobs",
	"TrainingJobs in the operator's cache, by phase. Only the elected replica reports it.",
	[]string{"phase"}, nil)

// jobCollector counts the TrainingJobs of the operator's cache by phase at
// each scrape, so the count is never stale and a deleted job needs no
// bookkeeping. It reports nothing until its source is set and the replica
// is elected (the manager starts the cache and waits for it to sync before
// it elects), so replicas on standby add no duplicate series.
type jobCollector struct {
	mu      sync.Mutex
	reader  client.Reader
	elected <-chan struct{}
}

// jobs is registered once; Setup points it at each manager's cache.
var jobs = &jobCollector{}

func (c *jobCollector) setSource(reader client.Reader, elected <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.elected = reader, elected
}

func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
}

func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader, elected := c.reader, c.elected
	c.mu.Unlock()
	if reader == nil || elected == nil {
		return
	}
	select {
	case <-elected:
	default:
		return
	}
	counts, err := countJobs(reader)
	if err != nil {
		// An error would fail the whole scrape: leave this one out.
		ctrl.Log.WithName("metrics").Error(err, "Counting TrainingJobs for muster_jobs")
		return
	}
	for _, p := range jobPhases {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(counts[p]), string(p))
	}
}

// countJobs counts the jobs reader lists by phase. A job the operator has
// not written a status for yet counts as Pending. The list is not copied:
// only the phases are read.
func countJobs(reader client.Reader) (map[musterv1.JobPhase]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jobListTimeout)
	defer cancel()
	var list musterv1.TrainingJobList
	if err := reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	counts := map[musterv1.JobPhase]int{}
	for i := range list.Items {
		p := list.Items[i].Status.Phase
		if p == "" {
			p = musterv1.PhasePending
		}
		counts[p]++
	}
	return counts, nil
}
