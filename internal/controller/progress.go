package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
)

// pendingProgress remembers, for each job whose plans showed only
// progress (plan.ProgressOnly), since when that progress waits to be
// written. A starting job's pods are seen, scheduled and started in
// several batches of pod events; each would otherwise cost a status
// write, and a TrainingJob status write costs the API server several times
// a pod's. A job is in the map only while it has unwritten progress.
type pendingProgress struct {
	window time.Duration
	// start lets a starting job's first status wait too
	// (plan.StartOnly), for the write that finds its pods running.
	start bool

	mu    sync.Mutex
	since map[types.NamespacedName]progressSince
}

// progressSince is when a job's progress was first left unwritten; the
// UID tells a job made again under the same name from its predecessor.
type progressSince struct {
	uid types.UID
	at  time.Time
}

func newPendingProgress(window time.Duration, start bool) *pendingProgress {
	return &pendingProgress{window: window, start: start, since: map[types.NamespacedName]progressSince{}}
}

// hold says whether the plan's status may wait, and for how long at
// most: it may when it differs from the written one (changed) by progress
// only, or, with start, only starts a job none of whose status is written
// yet, until the window has passed since progress was first left
// unwritten.
func (p *pendingProgress) hold(job *musterv1.TrainingJob, res plan.Result, changed bool, now time.Time) (time.Duration, bool) {
	if p.window <= 0 {
		return 0, false
	}
	key := client.ObjectKeyFromObject(job)
	p.mu.Lock()
	defer p.mu.Unlock()
	mayWait := plan.ProgressOnly(job, res) || p.start && plan.StartOnly(job, res)
	if !changed || !mayWait {
		// Nothing to write, or something that must be written now: the
		// write carries the progress too.
		delete(p.since, key)
		return 0, false
	}
	s, ok := p.since[key]
	if !ok || s.uid != job.UID {
		s = progressSince{uid: job.UID, at: now}
		p.since[key] = s
	}
	if left := s.at.Add(p.window).Sub(now); left > 0 {
		return left, true
	}
	delete(p.since, key)
	return 0, false
}

// forget drops a job that is gone or going.
func (p *pendingProgress) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.since, key)
}
