package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func pod(name, uid string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

// asked is pod with its in-place restart count as the operator set it.
func asked(p *corev1.Pod, count string) *corev1.Pod {
	p.Annotations = map[string]string{musterv1.AnnotationInPlaceRestarts: count}
	return p
}

func TestExpectations(t *testing.T) {
	t0 := time.Unix(100, 0)
	cases := map[string]struct {
		creates []string
		// createdUIDs are the UIDs the API server gave creates, by name.
		createdUIDs map[string]types.UID
		deletes     []types.UID
		// restarts are in-place restarts asked, count by pod UID.
		restarts map[types.UID]int
		observed []*corev1.Pod
		at       time.Time
		wantOK   bool
		wantWait time.Duration
	}{
		"nothing expected":           {at: t0, wantOK: true},
		"created pod not seen yet":   {creates: []string{"a"}, at: t0.Add(time.Second), wantOK: false, wantWait: 9 * time.Second},
		"created pod seen":           {creates: []string{"a"}, observed: []*corev1.Pod{pod("a", "1", false)}, at: t0, wantOK: true},
		"create expectation expired": {creates: []string{"a"}, at: t0.Add(10 * time.Second), wantOK: true},
		"replacement made, the old instance still seen": {creates: []string{"a"}, createdUIDs: map[string]types.UID{"a": "2"},
			observed: []*corev1.Pod{pod("a", "1", true)}, at: t0.Add(time.Second), wantOK: false, wantWait: 9 * time.Second},
		"replacement made and seen": {creates: []string{"a"}, createdUIDs: map[string]types.UID{"a": "2"},
			observed: []*corev1.Pod{pod("a", "2", false)}, at: t0, wantOK: true},
		"deleted pod still there": {deletes: []types.UID{"1"}, observed: []*corev1.Pod{pod("a", "1", false)}, at: t0, wantOK: false, wantWait: 10 * time.Second},
		"deleted pod terminating": {deletes: []types.UID{"1"}, observed: []*corev1.Pod{pod("a", "1", true)}, at: t0, wantOK: true},
		"deleted pod replaced":    {deletes: []types.UID{"1"}, observed: []*corev1.Pod{pod("a", "2", false)}, at: t0, wantOK: true},
		"restart asked, the cache shows the count before": {restarts: map[types.UID]int{"1": 2},
			observed: []*corev1.Pod{asked(pod("a", "1", false), "1")}, at: t0.Add(time.Second), wantOK: false, wantWait: 9 * time.Second},
		"restart asked and seen":          {restarts: map[types.UID]int{"1": 2}, observed: []*corev1.Pod{asked(pod("a", "1", false), "2")}, at: t0, wantOK: true},
		"restart asked, a later one seen": {restarts: map[types.UID]int{"1": 2}, observed: []*corev1.Pod{asked(pod("a", "1", false), "3")}, at: t0, wantOK: true},
		"restart asked, the pod gone":     {restarts: map[types.UID]int{"1": 2}, at: t0, wantOK: true},
		"restart asked, the pod deleting": {restarts: map[types.UID]int{"1": 2}, observed: []*corev1.Pod{asked(pod("a", "1", true), "1")}, at: t0, wantOK: true},
		"restart expectation expired":     {restarts: map[types.UID]int{"1": 2}, observed: []*corev1.Pod{asked(pod("a", "1", false), "1")}, at: t0.Add(10 * time.Second), wantOK: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExpectations(10 * time.Second)
			for _, n := range tc.creates {
				e.expectCreate("job", n, t0)
				if uid, ok := tc.createdUIDs[n]; ok {
					e.created("job", n, uid)
				}
			}
			for _, u := range tc.deletes {
				e.expectDelete("job", u, t0)
			}
			for u, n := range tc.restarts {
				e.expectRestart("job", u, n, t0)
			}
			ok, wait := e.satisfied("job", tc.observed, tc.at)
			if ok != tc.wantOK || wait != tc.wantWait {
				t.Errorf("satisfied = %v, %v; want %v, %v", ok, wait, tc.wantOK, tc.wantWait)
			}
		})
	}
}

// The expectations of a job that went away are dropped once they expire,
// while another job's open ones stay.
func TestExpectationsOfGoneJobsArePruned(t *testing.T) {
	e := newExpectations(time.Minute)
	t0 := time.Unix(1000, 0)
	e.expectCreate("gone", "gone-w-0", t0)
	e.expectDelete("gone", "uid-1", t0)
	e.expectCreate("live", "live-w-0", t0.Add(50*time.Second))
	e.pruneExpired(t0.Add(30 * time.Second))
	if e.size() != 2 {
		t.Fatalf("open expectations were pruned: %d jobs left", e.size())
	}
	e.pruneExpired(t0.Add(61 * time.Second))
	if e.size() != 1 {
		t.Fatalf("want only the live job's expectations left, got %d jobs", e.size())
	}
	if ok, _ := e.satisfied("live", nil, t0.Add(61*time.Second)); ok {
		t.Fatal("the live job's open create was dropped")
	}
}

// A Service the operator created counts as there until the cache shows it
// or the expectation times out; then the cache alone answers.
func TestServiceExpectation(t *testing.T) {
	t0 := time.Unix(100, 0)
	e := newExpectations(10 * time.Second)
	if e.serviceExists("job", false, t0) {
		t.Fatal("nothing created, nothing cached: no Service")
	}
	e.expectService("job", t0)
	if !e.serviceExists("job", false, t0.Add(time.Second)) {
		t.Fatal("created a second ago, not cached yet: the Service is there")
	}
	if !e.serviceExists("job", true, t0.Add(2*time.Second)) || e.size() != 0 {
		t.Fatalf("cached: the Service is there and nothing is expected (%d jobs expect)", e.size())
	}
	if e.serviceExists("job", false, t0.Add(3*time.Second)) {
		t.Fatal("met, then gone from the cache: the cache answers")
	}
	e.expectService("job", t0)
	if e.serviceExists("job", false, t0.Add(10*time.Second)) || e.size() != 0 {
		t.Fatal("an expectation never met expires")
	}
	e.expectService("job", t0)
	e.expectCreate("job", "job-w-0", t0)
	if ok, _ := e.satisfied("job", []*corev1.Pod{pod("job-w-0", "1", false)}, t0); !ok || e.size() != 1 {
		t.Fatal("pods met do not drop an open Service expectation")
	}
}

// The pod events the cache takes in meet the expectations of the instance
// they are about, even when the cache no longer holds it when the job is
// planned: a pod created and deleted again before that does not hold the
// job until the timeout.
func TestExpectationsMetByPodEvents(t *testing.T) {
	t0 := time.Unix(100, 0)
	type event struct {
		added     bool
		name, uid string
	}
	cases := map[string]struct {
		created string // the UID the create's answer named; "" for none yet
		events  []event
		wantOK  bool
	}{
		"added":                          {created: "2", events: []event{{true, "a", "2"}}, wantOK: true},
		"added, then gone":               {created: "2", events: []event{{true, "a", "2"}, {false, "a", "2"}}, wantOK: true},
		"gone unseen":                    {created: "2", events: []event{{false, "a", "2"}}, wantOK: true},
		"an earlier instance's events":   {created: "2", events: []event{{true, "a", "1"}, {false, "a", "1"}}, wantOK: false},
		"added before the create answer": {created: "", events: []event{{true, "a", "2"}}, wantOK: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExpectations(10 * time.Second)
			e.expectCreate("job", "a", t0)
			if tc.created != "" {
				e.created("job", "a", types.UID(tc.created))
			}
			for _, ev := range tc.events {
				e.podSeen("job", ev.name, types.UID(ev.uid), !ev.added)
			}
			// The cache holds none of the job's pods when it is planned.
			if ok, _ := e.satisfied("job", nil, t0.Add(time.Second)); ok != tc.wantOK {
				t.Errorf("satisfied = %v, want %v", ok, tc.wantOK)
			}
		})
	}
}

// A restart whose patch failed is not waited for: the next plan asks again.
func TestAFailedRestartIsNotWaitedFor(t *testing.T) {
	e := newExpectations(time.Minute)
	t0 := time.Unix(1000, 0)
	e.expectRestart("job", "1", 1, t0)
	e.restartFailed("job", "1")
	if ok, _ := e.satisfied("job", []*corev1.Pod{asked(pod("a", "1", false), "0")}, t0); !ok {
		t.Fatal("the job waits for a restart whose patch failed")
	}
}
