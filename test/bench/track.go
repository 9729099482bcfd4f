package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// tracker records, from a watch, when each pod was first seen and first
// seen bound to a node, and when each instance of it was first seen
// Running, so the bench measures
// without polling the API server it is measuring, and can say whether pods
// came late from their creator or from the scheduler.
type tracker struct {
	mu sync.Mutex
	// running is when each instance was first seen Running.
	running map[instance]seen
	// created and bound are when each instance was first seen, and first
	// seen on a node.
	created, bound map[types.UID]seen
	// asked is when each pod was first seen labelled with each attempt:
	// made for it, or asked to restart in place into it.
	asked   map[asked]seen
	changed chan struct{}
}

// seen is one pod instance.
type seen struct {
	ns, name, job string
	// task is the job's task the pod runs (taskKey), whatever the pod's
	// name.
	task string
	at   time.Time
}

// taskKey names task index of job.
func taskKey(job string, index int) string { return job + "/" + strconv.Itoa(index) }

// taskOf is the task a pod runs: its index label (the Job controller's,
// Muster's, or Muster's as the floors' pods carry it), or the index its
// name ends in (the floors' pods made from the template alone).
func taskOf(pod *corev1.Pod) string {
	for _, l := range []string{jobIndexLabel, musterv1.LabelTaskIndex, floorTaskIndexLabel} {
		if i, ok := pod.Labels[l]; ok {
			n, _ := strconv.Atoi(i)
			return taskKey(pod.Labels[jobLabel], n)
		}
	}
	return taskKey(pod.Labels[jobLabel], podIndex(pod.Name))
}

// jobLabel groups pods into jobs on both sides: the floor's pods carry it,
// and Muster's from their job's template. It is the bench's own: were it
// Muster's job label, the operator would cache and watch the floor's pods
// and Services, and add its watch to the floor's side.
const jobLabel = "bench.muster.dev/job"

func newTracker(ctx context.Context, cs kubernetes.Interface) (*tracker, error) {
	t := &tracker{running: map[instance]seen{}, created: map[types.UID]seen{}, bound: map[types.UID]seen{},
		asked: map[asked]seen{}, changed: make(chan struct{}, 1)}
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().Pods().Informer()
	note := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		t.mu.Lock()
		first(t.created, pod.UID, pod)
		first(t.asked, asked{pod.UID, pod.Labels[musterv1.LabelJobAttempt]}, pod)
		if pod.Spec.NodeName != "" {
			first(t.bound, pod.UID, pod)
		}
		t.mu.Unlock()
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			return
		}
		t.mu.Lock()
		if _, ok := t.running[instanceOf(pod)]; !ok {
			t.running[instanceOf(pod)] = seen{ns: pod.Namespace, name: pod.Name, job: pod.Labels[jobLabel], task: taskOf(pod), at: time.Now()}
		}
		t.mu.Unlock()
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, cur any) { note(cur) },
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the pod watch did not sync")
	}
	return t, nil
}

// instance is one run of a pod: a pod restarted in place runs again under
// the same UID, and its restart watcher's restart count tells the runs
// apart (the node restarts the watcher with every other container).
type instance struct {
	uid      types.UID
	restarts int32
}

// asked is a pod and the attempt it was labelled with.
type asked struct {
	uid     types.UID
	attempt string
}

func instanceOf(pod *corev1.Pod) instance {
	in := instance{uid: pod.UID}
	if w := observe.WatcherStatus(pod); w != nil {
		in.restarts = w.RestartCount
	}
	return in
}

// first records now for the pod under k in m, unless it is there.
func first[K comparable](m map[K]seen, k K, pod *corev1.Pod) {
	if _, ok := m[k]; !ok {
		m[k] = seen{ns: pod.Namespace, name: pod.Name, job: pod.Labels[jobLabel], task: taskOf(pod), at: time.Now()}
	}
}

// asked is how long after start the first and the last pod of ns were
// first seen labelled with an attempt they were not labelled with before
// start.
func (t *tracker) askedSince(ns string, start time.Time) (first, last time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	first = time.Duration(1<<63 - 1)
	for _, s := range t.asked {
		if s.ns == ns && !s.at.Before(start) {
			first, last = min(first, s.at.Sub(start)), max(last, s.at.Sub(start))
		}
	}
	return first, last
}

// lastOf is how long after start the last pod instance of ns seen since
// start was first seen in m.
func (t *tracker) lastOf(m map[types.UID]seen, ns string, start time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastSince(m, ns, start)
}

// lastSince is how long after start the last entry of ns seen since start
// was seen in m.
func lastSince[K comparable](m map[K]seen, ns string, start time.Time) time.Duration {
	var last time.Duration
	for _, s := range m {
		if s.ns == ns && !s.at.Before(start) {
			last = max(last, s.at.Sub(start))
		}
	}
	return last
}

// since are the pod instances of namespace ns seen Running at or after
// start.
func (t *tracker) since(ns string, start time.Time) []seen {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []seen
	for _, s := range t.running {
		if s.ns == ns && !s.at.Before(start) {
			out = append(out, s)
		}
	}
	return out
}

// replacements are, for each pod instance of ns seen Running since start
// whose task is in deleted, how long after its task's pod was deleted it
// was first seen (made) and seen Running, each sorted.
func (t *tracker) replacements(ns string, start time.Time, deleted map[string]time.Time) (made, running []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for in, s := range t.running {
		t0, ok := deleted[s.task]
		if s.ns != ns || s.at.Before(start) || !ok {
			continue
		}
		running = append(running, s.at.Sub(t0))
		if c, ok := t.created[in.uid]; ok {
			made = append(made, c.at.Sub(t0))
		}
	}
	sortDurations(made)
	sortDurations(running)
	return made, running
}

// wait waits until n pod instances of ns have been seen Running since
// start, and returns when the last of them was.
func (t *tracker) wait(ctx context.Context, ns string, start time.Time, n int, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		got := t.since(ns, start)
		if len(got) >= n {
			last := start
			for _, s := range got {
				if s.at.After(last) {
					last = s.at
				}
			}
			return last, nil
		}
		select {
		case <-t.changed:
		case <-time.After(time.Second):
		case <-deadline:
			return time.Time{}, fmt.Errorf("%d of %d pods running in %s after %s", len(got), n, ns, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// perJob is, for each job of ns, how long after start (when all the jobs
// were asked for at once) its last pod seen since start was Running. Both
// sides are timed from the same moment: a job waits for its creator,
// Muster's operator or the floor's creators, as much as for the cluster.
func (t *tracker) perJob(ns string, start time.Time) []time.Duration {
	last := map[string]time.Time{}
	for _, s := range t.since(ns, start) {
		if s.at.After(last[s.job]) {
			last[s.job] = s.at
		}
	}
	out := make([]time.Duration, 0, len(last))
	for _, at := range last {
		out = append(out, at.Sub(start))
	}
	sortDurations(out)
	return out
}

func sortDurations(d []time.Duration) { slices.Sort(d) }

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
