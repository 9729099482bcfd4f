package e2e

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// Preemption of whole gangs by each gang scheduler: two low-priority gangs
// of 4 tasks × 2 GPUs fill the fake nodes' 16 GPUs; a third gang that must
// run evicts members of one or both; each victim restarts as a whole new
// attempt, not charged to its budget, waits (never half placed) and runs to
// its end once room comes back. Alone in the fake-node lane: they need the
// fake nodes' GPUs to themselves.

const (
	lowPriorityClass  = "muster-e2e-low"
	highPriorityClass = "muster-e2e-high"
)

// priorityClasses makes the low and high classes for one test.
func priorityClasses(t *testing.T, g gomega.Gomega, c client.Client) {
	for name, value := range map[string]int32{lowPriorityClass: 10, highPriorityClass: 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		g.Expect(client.IgnoreAlreadyExists(c.Create(context.Background(), pc))).To(gomega.Succeed())
		t.Cleanup(func() { _ = c.Delete(context.Background(), pc) })
	}
}

// gangPreemption is one scenario: the victims' and the preemptor's
// scheduling (backend, priority class, queue), and the event the scheduler
// records on each pod it evicts.
type gangPreemption struct {
	low, high musterv1.Scheduling
	// evictReason and evictMessage are the event's reason and a part of
	// its message.
	evictReason, evictMessage string
}

func (p gangPreemption) run(t *testing.T) {
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	gangJob := func(name string, s musterv1.Scheduling, runFor time.Duration) *musterv1.TrainingJob {
		return testutil.MakeJob(name, ns).Role("worker", 4).Template(fakeGPUTasks(2, runFor)).Scheduling(s).Obj()
	}
	lows := []string{"low-a", "low-b"}
	for _, name := range lows {
		g.Expect(c.Create(ctx, gangJob(name, p.low, 45*time.Second))).To(gomega.Succeed())
	}
	for _, name := range lows {
		framework.WaitJob(g, c, ns, name, jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	}
	watch := newGangWatch(t, c, ns, 4, "low-a", "low-b", "high")
	g.Expect(c.Create(ctx, gangJob("high", p.high, 15*time.Second))).To(gomega.Succeed())

	// The preemptor's gang is placed whole, and a low one has a new
	// attempt: the whole gang restarted, not just its evicted members.
	var victims []string
	g.Eventually(func(g gomega.Gomega) {
		watch.check(g)
		victims = nil
		for _, name := range lows {
			j := &musterv1.TrainingJob{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j)).To(gomega.Succeed())
			if j.Status.Attempt > 0 {
				victims = append(victims, name)
			}
		}
		g.Expect(victims).NotTo(gomega.BeEmpty(), "a low-priority gang was preempted")
		high := &musterv1.TrainingJob{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "high"}, high)).To(gomega.Succeed())
		g.Expect(high.Status.Phase).To(gomega.BeElementOf(musterv1.PhaseRunning, musterv1.PhaseSucceeded), "the preemptor: %+v", high.Status.Conditions)
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	t.Logf("preempted: %v", victims)

	// Every job ends, the victims once room has come back.
	g.Eventually(func(g gomega.Gomega) {
		watch.check(g)
		for _, name := range append(lows, "high") {
			j := &musterv1.TrainingJob{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j)).To(gomega.Succeed())
			g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded), "job %s: %+v", name, j.Status.Conditions)
		}
	}, 2*jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	high := &musterv1.TrainingJob{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "high"}, high)).To(gomega.Succeed())
	g.Expect(high.Status.Attempt).To(gomega.BeZero(), "the preemptor ran in one attempt")
	for _, name := range victims {
		j := &musterv1.TrainingJob{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j)).To(gomega.Succeed())
		g.Expect(j.Status.Restarts.Total).To(gomega.BeNumerically(">", 0))
		g.Expect(j.Status.Restarts.Accountable).To(gomega.BeZero(), "preemption is not charged: %+v", j.Status.Restarts)
		g.Expect(j.Status.Retries.Accountable).To(gomega.BeZero(), "preemption is not charged: %+v", j.Status.Retries)
		g.Expect(j.Status.Attempts).NotTo(gomega.BeEmpty())
		ended := j.Status.Attempts[0].Completion
		t.Logf("%s: attempt %d ended: %s", name, j.Status.Attempts[0].ID, ended.Message)
		// The member's end is the scheduler's DisruptionTarget condition.
		g.Expect(ended.Message).To(gomega.ContainSubstring(corev1.PodReasonPreemptionByScheduler))
	}
	// The scheduler says it evicted them, and why.
	var events corev1.EventList
	g.Expect(c.List(ctx, &events, client.InNamespace(ns))).To(gomega.Succeed())
	evicted := map[string]bool{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Pod" && e.Reason == p.evictReason && strings.Contains(e.Message, p.evictMessage) {
			evicted[e.InvolvedObject.Name] = true
		}
	}
	g.Expect(evicted).NotTo(gomega.BeEmpty(), "no %s event saying %q", p.evictReason, p.evictMessage)
	for pod := range evicted {
		g.Expect(victims).To(gomega.ContainElement(strings.SplitN(pod, "-worker-", 2)[0]), "%s was evicted, but its job was not restarted", pod)
	}
	t.Logf("evicted: %v", slices.Sorted(maps.Keys(evicted)))
}

// Volcano's preempt action: within a queue, a higher-priority gang evicts
// lower-priority pods, but only for a gang that then fits whole.
func TestVolcanoGangPreemptionRestartsTheVictimWhole(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	priorityClasses(t, g, cluster.Client)
	gangPreemption{
		low:         musterv1.Scheduling{Backend: musterv1.GangVolcano, PriorityClassName: lowPriorityClass},
		high:        musterv1.Scheduling{Backend: musterv1.GangVolcano, PriorityClassName: highPriorityClass},
		evictReason: "Evict", evictMessage: "because of preempt",
	}.run(t)
}

// Volcano's reclaim action: a gang in a queue below its deserved share
// takes room back from a queue above its own, whatever the priorities.
func TestVolcanoGangReclaimRestartsTheVictimWhole(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	a, b := volcanoQueue(t, g, "muster-e2e-a"), volcanoQueue(t, g, "muster-e2e-b")
	gangPreemption{
		low:         musterv1.Scheduling{Backend: musterv1.GangVolcano, VolcanoQueue: a},
		high:        musterv1.Scheduling{Backend: musterv1.GangVolcano, VolcanoQueue: b},
		evictReason: "Evict", evictMessage: "because of reclaim",
	}.run(t)
}

// The coscheduling plugin leaves preemption to kube-scheduler's
// DefaultPreemption, pod by pod: each pod of the high-priority gang evicts
// what it needs, and the gang is let through Permit once whole.
func TestCoschedulingGangPreemptionRestartsTheVictimWhole(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	priorityClasses(t, g, cluster.Client)
	gangPreemption{
		low:         musterv1.Scheduling{Backend: musterv1.GangCoscheduling, PriorityClassName: lowPriorityClass},
		high:        musterv1.Scheduling{Backend: musterv1.GangCoscheduling, PriorityClassName: highPriorityClass},
		evictReason: "Preempted", evictMessage: "Preempted by",
	}.run(t)
}

var volcanoQueueResource = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}

// volcanoQueue makes a reclaimable Volcano queue of weight 1 for one test
// and waits until its controller has opened it.
func volcanoQueue(t *testing.T, g gomega.Gomega, name string) string {
	ctx := context.Background()
	queues := dynamicClient(g).Resource(volcanoQueueResource)
	q := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"weight": int64(1), "reclaimable": true},
	}}
	_, err := queues.Create(ctx, q, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() { _ = queues.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	g.Eventually(func(g gomega.Gomega) {
		q, err := queues.Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		state, _, _ := unstructured.NestedString(q.Object, "status", "state")
		g.Expect(state).To(gomega.Equal("Open"))
	}, time.Minute, 500*time.Millisecond).Should(gomega.Succeed())
	return name
}
