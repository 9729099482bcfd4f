package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// expectations remembers the pod creates, deletes and in-place restarts,
// and the Service creates, the operator made that its cache has not shown
// yet. Planning on a cache that lags behind our own writes would create a
// pod twice or count a failure twice; while a pod expectation is open, the
// job waits instead. A pod expectation is met by the pod's own events as
// the cache takes them in (a pod created and deleted again before the job
// is planned meets its create when it is added, or when it goes), and by
// what the cache holds when the job is planned. One that is never met (the
// watch missed the pod's whole life) expires.
type expectations struct {
	mu      sync.Mutex
	timeout time.Duration
	jobs    map[types.UID]*jobExpectations
}

type jobExpectations struct {
	creates map[string]createExpectation // by pod name
	deletes map[types.UID]time.Time      // pod UID -> when deleted
	// leaves are pods the cache shows that the API server no longer has
	// (confirmPods): met once the cache lets them go.
	leaves map[types.UID]time.Time
	// restarts are pods asked to restart in place: met once the cache
	// shows the ask. Planned on a cache without it, the same pod would be
	// asked again: no harm, as the ask names its count, but a write each.
	restarts map[types.UID]restartExpectation
	// service is when the job's Service was created; zero once the cache
	// shows it. It does not hold the job back: a job with no pods to make
	// yet (suspended, queued, held) plans again as soon as its own status
	// write comes back, and must neither make its new Service again nor
	// take the refused second create for a name taken.
	service time.Time
}

// createExpectation is a pod create the cache has yet to show. Once the
// API server has answered, the new pod's UID is known: until the cache
// shows that instance, an older one of the same name it may still hold (a
// replacement made the moment its predecessor was released) does not meet
// it.
type createExpectation struct {
	since time.Time
	uid   types.UID
}

// restartExpectation is an in-place restart the cache has yet to show:
// the pod's in-place restart count the operator set.
type restartExpectation struct {
	since time.Time
	asked int
}

func newExpectations(timeout time.Duration) *expectations {
	return &expectations{timeout: timeout, jobs: map[types.UID]*jobExpectations{}}
}

func (e *expectations) get(job types.UID) *jobExpectations {
	j := e.jobs[job]
	if j == nil {
		j = &jobExpectations{creates: map[string]createExpectation{}, deletes: map[types.UID]time.Time{}, leaves: map[types.UID]time.Time{},
			restarts: map[types.UID]restartExpectation{}}
		e.jobs[job] = j
	}
	return j
}

func (e *expectations) expectCreate(job types.UID, name string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(job).creates[name] = createExpectation{since: now}
}

// created records the UID the API server gave a pod the operator created.
func (e *expectations) created(job types.UID, name string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.get(job)
	if c, ok := j.creates[name]; ok {
		c.uid = uid
		j.creates[name] = c
	}
}

func (e *expectations) createFailed(job types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.get(job).creates, name)
}

// podSeen meets the expectations a pod event settles: the create of the
// instance the cache has just taken in (added) or let go (gone: the cache
// may never have shown it), and the delete of one that is gone. Only a
// create whose answer named this UID is met: before the answer, an event of
// the name alone could be an earlier instance's, and the cache check at
// the next plan meets it instead.
func (e *expectations) podSeen(job types.UID, name string, uid types.UID, gone bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[job]
	if j == nil {
		return
	}
	if c, ok := j.creates[name]; ok && c.uid == uid {
		delete(j.creates, name)
	}
	if gone {
		delete(j.deletes, uid)
		delete(j.leaves, uid)
		delete(j.restarts, uid)
	}
	e.dropIfEmpty(job, j)
}

func (e *expectations) expectDelete(job types.UID, pod types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(job).deletes[pod] = now
}

// expectView expects the cache to show the pod instances the API server
// has and it does not (appear), and to let go of those it shows and the
// API server no longer has (leave).
func (e *expectations) expectView(job types.UID, appear []plan.PodRef, leave []types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.get(job)
	for _, p := range appear {
		j.creates[p.Name] = createExpectation{since: now, uid: p.UID}
	}
	for _, uid := range leave {
		j.leaves[uid] = now
	}
}

// expectRestart expects the cache to show pod asked to restart in place
// for the asked-th time.
func (e *expectations) expectRestart(job, pod types.UID, asked int, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(job).restarts[pod] = restartExpectation{since: now, asked: asked}
}

func (e *expectations) restartFailed(job, pod types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.get(job).restarts, pod)
}

func (e *expectations) deleteFailed(job types.UID, pod types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.get(job).deletes, pod)
}

func (e *expectations) expectService(job types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(job).service = now
}

// serviceExists is whether the job's Service is to be taken as there: the
// cache shows it (which meets the expectation), or the operator created it
// within the timeout and the cache has yet to show it.
func (e *expectations) serviceExists(job types.UID, cached bool, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[job]
	if j == nil || j.service.IsZero() {
		return cached
	}
	if cached || now.Sub(j.service) >= e.timeout {
		j.service = time.Time{}
		e.dropIfEmpty(job, j)
		return cached
	}
	return true
}

// dropIfEmpty forgets a job that expects nothing any more.
// empty is whether no pod write of the job waits for the cache.
func (j *jobExpectations) empty() bool {
	return len(j.creates) == 0 && len(j.deletes) == 0 && len(j.leaves) == 0 && len(j.restarts) == 0
}

func (e *expectations) dropIfEmpty(job types.UID, j *jobExpectations) {
	if j.empty() && j.service.IsZero() {
		delete(e.jobs, job)
	}
}

func (e *expectations) forget(job types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.jobs, job)
}

// pruneExpired drops the expectations of every job whose expectations have
// all expired: those of a job that went away (its reconcile finds it gone
// and cannot name its UID) would otherwise stay for the operator's life.
func (e *expectations) pruneExpired(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	live := func(since time.Time) bool { return now.Sub(since) < e.timeout }
	for uid, j := range e.jobs {
		open := !j.service.IsZero() && live(j.service)
		for _, c := range j.creates {
			open = open || live(c.since)
		}
		for _, since := range j.deletes {
			open = open || live(since)
		}
		for _, since := range j.leaves {
			open = open || live(since)
		}
		if !open {
			delete(e.jobs, uid)
		}
	}
}

// size is how many jobs have expectations.
func (e *expectations) size() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.jobs)
}

// satisfied drops the expectations pods meets and reports whether any are
// left, and if so how long until the oldest expires.
func (e *expectations) satisfied(job types.UID, pods []*corev1.Pod, now time.Time) (bool, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[job]
	if j == nil {
		return true, 0
	}
	byName := make(map[string]*corev1.Pod, len(pods))
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		byName[p.Name] = p
		byUID[p.UID] = p
	}
	wait := time.Duration(0)
	pending := func(since time.Time) bool {
		left := e.timeout - now.Sub(since)
		if left <= 0 {
			return false
		}
		if wait == 0 || left < wait {
			wait = left
		}
		return true
	}
	j.meet(byName, byUID, pending)
	if j.empty() {
		e.dropIfEmpty(job, j)
		return true, 0
	}
	return false, wait
}

// meet drops the expectations the cached pods meet, and those no longer
// pending.
func (j *jobExpectations) meet(byName map[string]*corev1.Pod, byUID map[types.UID]*corev1.Pod, pending func(time.Time) bool) {
	for name, c := range j.creates {
		if p := byName[name]; (p != nil && (c.uid == "" || p.UID == c.uid)) || !pending(c.since) {
			delete(j.creates, name)
		}
	}
	for uid, since := range j.deletes {
		if p := byUID[uid]; p == nil || p.DeletionTimestamp != nil || !pending(since) {
			delete(j.deletes, uid)
		}
	}
	for uid, since := range j.leaves {
		if byUID[uid] == nil || !pending(since) {
			delete(j.leaves, uid)
		}
	}
	for uid, r := range j.restarts {
		if p := byUID[uid]; p == nil || p.DeletionTimestamp != nil || askedAtLeast(p, r.asked) || !pending(r.since) {
			delete(j.restarts, uid)
		}
	}
}

// askedAtLeast is whether pod shows it was asked to restart in place n
// times or more.
func askedAtLeast(pod *corev1.Pod, n int) bool {
	asked, ok := observe.AskedRestarts(pod)
	return ok && asked >= n
}
