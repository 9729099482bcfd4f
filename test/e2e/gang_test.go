package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

// fakeGPUTasks makes the last role's tasks run on the KWOK nodes, each
// holding gpus GPUs and finishing after runFor.
func fakeGPUTasks(gpus int, runFor time.Duration) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) {
		p.Annotations = map[string]string{
			devcluster.KWOKCompleteDelayAnnotation: runFor.String(),
			devcluster.KWOKExitCodeAnnotation:      "0",
		}
		p.Spec.Tolerations = []corev1.Toleration{{Key: devcluster.FakeNodeTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{devcluster.GPUResource: resource.MustParse(fmt.Sprint(gpus))}
	}
}

// Three jobs of 4 tasks × 2 GPUs on 16 GPUs, gang-scheduled: two run
// whole, the third places no pod and says why, then runs when one
// finishes. No job ever has part of its gang placed. Alone in the fake-node
// lane: they need the fake nodes' GPUs to themselves.
func TestNativeGangNeverPlacesPartOfAJob(t *testing.T) {
	fakeNodes.exclusive(t)
	checkNoPartialGang(t, musterv1.GangNative, string(musterv1.ReasonGangUnschedulable))
}

// The coscheduling plugin may hold the third gang's pods at its Permit
// stage, where they get no Unschedulable condition: the job then says how
// many of its gang are placed (GangPending).
func TestCoschedulingGangNeverPlacesPartOfAJob(t *testing.T) {
	fakeNodes.exclusive(t)
	checkNoPartialGang(t, musterv1.GangCoscheduling, string(musterv1.ReasonGangUnschedulable), string(musterv1.ReasonGangPending))
}

// Volcano may keep the third gang out of its queue (Queued) or let it in
// and find no room (Unschedulable), by its queue's overcommit.
func TestVolcanoGangNeverPlacesPartOfAJob(t *testing.T) {
	fakeNodes.exclusive(t)
	checkNoPartialGang(t, musterv1.GangVolcano, string(musterv1.ReasonGangUnschedulable), string(musterv1.ReasonGangQueued))
}

func checkNoPartialGang(t *testing.T, backend musterv1.GangBackend, reasons ...string) {
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	names := []string{"gang-a", "gang-b", "gang-c"}
	for _, name := range names {
		job := testutil.MakeJob(name, ns).Role("worker", 4).Template(fakeGPUTasks(2, 20*time.Second)).
			Scheduling(musterv1.Scheduling{Backend: backend}).Obj()
		g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	}

	watch := newGangWatch(t, c, ns, 4, names...)
	bound := watch.check

	var waiting string
	g.Eventually(func(g gomega.Gomega) {
		placed := bound(g)
		whole := 0
		for _, n := range placed {
			if n == 4 {
				whole++
			}
		}
		g.Expect(whole).To(gomega.Equal(2), "two whole gangs placed: %v", placed)
		g.Expect(placed).To(gomega.HaveLen(2), "and no pod of the third: %v", placed)
		for _, name := range names {
			if placed[name] == 0 {
				waiting = name
			}
		}
		job := &musterv1.TrainingJob{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: waiting}, job)).To(gomega.Succeed())
		cond := apimeta.FindStatusCondition(job.Status.Conditions, string(musterv1.ConditionGangScheduled))
		g.Expect(cond).NotTo(gomega.BeNil())
		g.Expect(cond.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(reasons).To(gomega.ContainElement(cond.Reason), "condition: %+v", cond)
		g.Expect(cond.Message).NotTo(gomega.BeEmpty())
		if backend == musterv1.GangNative {
			g.Expect(cond.Message).To(gomega.ContainSubstring(string(devcluster.GPUResource)))
		}
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	job := &musterv1.TrainingJob{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: waiting}, job)).To(gomega.Succeed())
	t.Logf("%s waits: %s", waiting, apimeta.FindStatusCondition(job.Status.Conditions, string(musterv1.ConditionGangScheduled)).Message)

	// When the first two finish, the third gets its whole gang and ends.
	g.Eventually(func(g gomega.Gomega) {
		bound(g)
		for _, name := range names {
			job := &musterv1.TrainingJob{}
			g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job)).To(gomega.Succeed())
			g.Expect(job.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded), "job %s: %+v", name, job.Status.Conditions)
		}
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: waiting}, job)).To(gomega.Succeed())
	cond := apimeta.FindStatusCondition(job.Status.Conditions, string(musterv1.ConditionGangScheduled))
	g.Expect(cond).NotTo(gomega.BeNil())
	g.Expect(cond.Status).To(gomega.Equal(metav1.ConditionTrue))
}

// gangWatch fails the test on a part of a gang that stays placed. A
// gang's pods are bound one API call each, so a list may catch a burst half
// done, but the rest follows at once; a member that is preempted or evicted
// leaves the rest of its gang placed until they are deleted for a new
// attempt, which follows as quickly. Without a gang a part stays until
// another job ends (20s or more). A finished job's pods go one by one, so
// only jobs still unfinished after the pods were listed are judged.
type gangWatch struct {
	t         *testing.T
	c         client.Client
	ns        string
	size      int
	names     []string
	partSince map[string]time.Time
}

func newGangWatch(t *testing.T, c client.Client, ns string, size int, names ...string) *gangWatch {
	return &gangWatch{t: t, c: c, ns: ns, size: size, names: names, partSince: map[string]time.Time{}}
}

// check counts each job's pods that are on a node and not being deleted.
func (w *gangWatch) check(g gomega.Gomega) map[string]int {
	var pods corev1.PodList
	g.Expect(w.c.List(context.Background(), &pods, client.InNamespace(w.ns))).To(gomega.Succeed())
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out[p.Labels[musterv1.LabelJobName]]++
		}
	}
	for _, name := range w.names {
		job := &musterv1.TrainingJob{}
		g.Expect(w.c.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, job)).To(gomega.Succeed())
		if n := out[name]; n == 0 || n == w.size || job.Status.Finished() {
			delete(w.partSince, name)
			continue
		}
		if _, ok := w.partSince[name]; !ok {
			w.partSince[name] = time.Now()
		}
		if d := time.Since(w.partSince[name]); d > 8*time.Second {
			w.t.Fatalf("job %s has had %d of its %d gang members placed for %s: a partial gang", name, out[name], w.size, d.Round(time.Second))
		}
	}
	return out
}

// A high-priority gang preempts a whole low-priority one (the scheduler's
// DefaultPreemption, with the pods' priority): the victim's preempted
// member restarts its whole gang (not charged), which waits until the
// high-priority job is done and then runs to its end (preempt_test.go).
func TestNativeGangPreemptionRestartsTheVictimWhole(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	priorityClasses(t, g, cluster.Client)
	gangPreemption{
		low:         musterv1.Scheduling{Backend: musterv1.GangNative, PriorityClassName: lowPriorityClass},
		high:        musterv1.Scheduling{Backend: musterv1.GangNative, PriorityClassName: highPriorityClass},
		evictReason: "Preempted", evictMessage: "Preempted by",
	}.run(t)
}

// An elastic job gangs only its minimum: with room for 2 of its 4 workers
// the 2 start together, and the other 2 are placed as room appears. Alone in
// the fake-node lane: it needs the fake nodes' GPUs to itself.
func TestNativeGangCoversTheElasticMinimum(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	blocker := testutil.MakeJob("blocker", ns).Role("worker", 2).Template(fakeGPUTasks(4, 20*time.Second)).Obj()
	g.Expect(c.Create(context.Background(), blocker)).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "blocker", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))

	elastic := testutil.MakeJob("elastic", ns).Role("worker", 0).Scalable(2, 4).ScalingReplicas(4).
		Template(fakeGPUTasks(4, 40*time.Second)).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative}).Obj()
	g.Expect(c.Create(context.Background(), elastic)).To(gomega.Succeed())
	placed := func(g gomega.Gomega) int {
		var pods corev1.PodList
		g.Expect(c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{musterv1.LabelJobName: "elastic"})).To(gomega.Succeed())
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	got := framework.WaitJob(g, c, ns, "elastic", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		cond := apimeta.FindStatusCondition(j.Status.Conditions, string(musterv1.ConditionGangScheduled))
		g.Expect(cond).NotTo(gomega.BeNil())
		g.Expect(cond.Status).To(gomega.Equal(metav1.ConditionTrue), "condition %+v", cond)
		g.Expect(placed(g)).To(gomega.Equal(2))
	})
	g.Expect(got.Status.Scheduling.MinAvailable).To(gomega.Equal(int32(2)))
	// The blocker's end makes room for the rest.
	g.Eventually(func(g gomega.Gomega) { g.Expect(placed(g)).To(gomega.Equal(4)) }, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
}
