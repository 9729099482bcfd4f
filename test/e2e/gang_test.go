package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
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
// finishes. No job ever has part of its gang placed. Not parallel: they
// need the fake nodes' GPUs to themselves.
func TestNativeGangNeverPlacesPartOfAJob(t *testing.T) {
	checkNoPartialGang(t, musterv1.GangNative, musterv1.ReasonGangUnschedulable)
}

// The coscheduling plugin may hold the third gang's pods at its Permit
// stage, where they get no Unschedulable condition: the job then says how
// many of its gang are placed (GangPending).
func TestCoschedulingGangNeverPlacesPartOfAJob(t *testing.T) {
	checkNoPartialGang(t, musterv1.GangCoscheduling, musterv1.ReasonGangUnschedulable, musterv1.ReasonGangPending)
}

// Volcano may keep the third gang out of its queue (Queued) or let it in
// and find no room (Unschedulable), by its queue's overcommit.
func TestVolcanoGangNeverPlacesPartOfAJob(t *testing.T) {
	checkNoPartialGang(t, musterv1.GangVolcano, musterv1.ReasonGangUnschedulable, musterv1.ReasonGangQueued)
}

func checkNoPartialGang(t *testing.T, backend musterv1.GangBackend, reasons ...string) {
	g := gomega.NewWithT(t)
	c := jobClient(g)
	ns := newNamespace(t, g)
	names := []string{"gang-a", "gang-b", "gang-c"}
	for _, name := range names {
		job := testutil.MakeJob(name, ns).Role("worker", 4).Template(fakeGPUTasks(2, 20*time.Second)).
			Scheduling(musterv1.Scheduling{Backend: backend}).Obj()
		g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	}

	// bound counts each job's pods that are on a node, and fails the test
	// on a part of a gang that stays: a gang's pods are bound one API call
	// each, so a list may catch a burst half done, but the rest follows at
	// once. Without a gang a part stays until another job ends (20s).
	// A finished job's pods go one by one, so only jobs still unfinished
	// after the pods were listed are judged.
	partSince := map[string]time.Time{}
	bound := func(g gomega.Gomega) map[string]int {
		var pods corev1.PodList
		g.Expect(c.List(context.Background(), &pods, client.InNamespace(ns))).To(gomega.Succeed())
		out := map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				out[p.Labels[musterv1.LabelJobName]]++
			}
		}
		for _, name := range names {
			job := &musterv1.TrainingJob{}
			g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job)).To(gomega.Succeed())
			if n := out[name]; n == 0 || n == 4 || job.Status.Finished() {
				delete(partSince, name)
				continue
			}
			if _, ok := partSince[name]; !ok {
				partSince[name] = time.Now()
			}
			if time.Since(partSince[name]) > 8*time.Second {
				t.Fatalf("job %s has had %d of its 4 gang members placed for %s: a partial gang", name, out[name], time.Since(partSince[name]).Round(time.Second))
			}
		}
		return out
	}

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

// A high-priority gang preempts a whole low-priority one: the victim's
// preempted member restarts its whole gang (not charged), which waits
// until the high-priority job is done and then runs to its end. Not
// parallel: it needs the fake nodes' GPUs to itself.
func TestNativeGangPreemptionRestartsTheVictimWhole(t *testing.T) {
	g := gomega.NewWithT(t)
	c := jobClient(g)
	ns := newNamespace(t, g)
	for name, value := range map[string]int32{"muster-e2e-low": 10, "muster-e2e-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		g.Expect(client.IgnoreAlreadyExists(c.Create(context.Background(), pc))).To(gomega.Succeed())
		t.Cleanup(func() { _ = c.Delete(context.Background(), pc) })
	}
	gangJob := func(name, priority string, runFor time.Duration) *musterv1.TrainingJob {
		return testutil.MakeJob(name, ns).Role("worker", 4).Template(fakeGPUTasks(2, runFor)).
			Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative, PriorityClassName: priority}).Obj()
	}
	for _, name := range []string{"low-a", "low-b"} {
		g.Expect(c.Create(context.Background(), gangJob(name, "muster-e2e-low", 45*time.Second))).To(gomega.Succeed())
	}
	for _, name := range []string{"low-a", "low-b"} {
		waitJob(g, c, ns, name, phaseIs(musterv1.PhaseRunning))
	}
	g.Expect(c.Create(context.Background(), gangJob("high", "muster-e2e-high", 15*time.Second))).To(gomega.Succeed())

	// One low job is the victim: a new attempt, nothing charged.
	var victim string
	g.Eventually(func(g gomega.Gomega) {
		for _, name := range []string{"low-a", "low-b"} {
			j := &musterv1.TrainingJob{}
			g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, j)).To(gomega.Succeed())
			if j.Status.Attempt > 0 {
				victim = name
			}
		}
		g.Expect(victim).NotTo(gomega.BeEmpty(), "a low-priority gang was preempted")
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	t.Logf("%s was preempted", victim)
	waitJob(g, c, ns, "high", phaseIs(musterv1.PhaseSucceeded))
	got := waitJob(g, c, ns, victim, phaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Restarts.Accountable).To(gomega.BeZero(), "preemption is not charged: %+v", got.Status.Restarts)
}

// An elastic job gangs only its minimum: with room for 2 of its 4 workers
// the 2 start together, and the other 2 are placed as room appears. Not
// parallel: it needs the fake nodes' GPUs to itself.
func TestNativeGangCoversTheElasticMinimum(t *testing.T) {
	g := gomega.NewWithT(t)
	c := jobClient(g)
	ns := newNamespace(t, g)
	blocker := testutil.MakeJob("blocker", ns).Role("worker", 2).Template(fakeGPUTasks(4, 20*time.Second)).Obj()
	g.Expect(c.Create(context.Background(), blocker)).To(gomega.Succeed())
	waitJob(g, c, ns, "blocker", phaseIs(musterv1.PhaseRunning))

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
	got := waitJob(g, c, ns, "elastic", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		cond := apimeta.FindStatusCondition(j.Status.Conditions, string(musterv1.ConditionGangScheduled))
		g.Expect(cond).NotTo(gomega.BeNil())
		g.Expect(cond.Status).To(gomega.Equal(metav1.ConditionTrue), "condition %+v", cond)
		g.Expect(placed(g)).To(gomega.Equal(2))
	})
	g.Expect(got.Status.Scheduling.MinAvailable).To(gomega.Equal(int32(2)))
	// The blocker's end makes room for the rest.
	g.Eventually(func(g gomega.Gomega) { g.Expect(placed(g)).To(gomega.Equal(4)) }, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
}
