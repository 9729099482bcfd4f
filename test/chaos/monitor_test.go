package chaos

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil/invariants"
)

// monitor watches one namespace's pods and jobs through its own informers
// (never the operator's) and feeds what it sees to the invariants' checker
// (internal/testutil/invariants, whose unit tests show each check fires):
// no task has two pods that may run at once, graceful deletions included,
// and no pod of a job is created after the job finished.
type monitor struct {
	*invariants.Checker
}

func startMonitor(t *testing.T, namespace string) *monitor {
	t.Helper()
	m := &monitor{invariants.New()}
	c, err := cache.New(cluster.REST, cache.Options{Scheme: k8s.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	podInf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	jobInf, err := c.GetInformer(ctx, &musterv1.TrainingJob{})
	if err != nil {
		t.Fatal(err)
	}
	onPod := func(obj any, added bool) {
		pod, ok := obj.(*corev1.Pod)
		switch {
		case !ok:
		case added:
			m.Added(pod)
		default:
			m.Pod(pod)
		}
	}
	if _, err := podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { onPod(obj, true) },
		UpdateFunc: func(_, obj any) { onPod(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				m.Gone(pod)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	onJob := func(obj any) {
		if job, ok := obj.(*musterv1.TrainingJob); ok {
			m.Job(job)
		}
	}
	if _, err := jobInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    onJob,
		UpdateFunc: func(_, obj any) { onJob(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("the monitor's caches did not sync")
	}
	return m
}

// check fails the test with every violation seen so far.
func (m *monitor) check(t *testing.T) {
	t.Helper()
	for _, v := range m.Violations() {
		t.Error("invariant broken:", v)
	}
}
