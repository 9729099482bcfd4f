package e2e

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/queue/kueue"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

// Two TrainingJobs of 8 GPUs in a LocalQueue whose ClusterQueue has 8:
// Kueue admits one, which runs on its flavor's nodes, and holds the other
// with no pods until the first is done; each Workload ends Finished. Alone in
// the fake-node lane: it needs the fake nodes' GPUs to itself.
func TestKueueQuotaHoldsATrainingJobUntilThereIsRoom(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	kueueQueue(t, g, ns, nil)
	names := []string{"first", "second"}
	for _, name := range names {
		job := testutil.MakeJob(name, ns).Role("worker", 4).Template(queuedGPUTasks(15 * time.Second)).Obj()
		job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
		g.Expect(c.Create(ctx, job)).To(gomega.Succeed())
	}

	// One is admitted and runs on the flavor's nodes; the other waits with
	// no pods, saying why.
	var running, waiting string
	g.Eventually(func(g gomega.Gomega) {
		running, waiting = "", ""
		for _, name := range names {
			j := &musterv1.TrainingJob{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j)).To(gomega.Succeed())
			switch {
			case j.Status.Phase == musterv1.PhaseRunning:
				running = name
			case j.Status.IsTrue(musterv1.ConditionSuspended):
				cond := j.Status.Condition(musterv1.ConditionSuspended)
				g.Expect(cond.Reason).To(gomega.Equal(string(musterv1.ReasonWaitingForAdmission)))
				waiting = name
			}
		}
		g.Expect(running).NotTo(gomega.BeEmpty())
		g.Expect(waiting).NotTo(gomega.BeEmpty())
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	var pods corev1.PodList
	g.Expect(c.List(ctx, &pods, client.InNamespace(ns))).To(gomega.Succeed())
	for _, p := range pods.Items {
		g.Expect(p.Labels[musterv1.LabelJobName]).To(gomega.Equal(running), "a pod of the job Kueue holds: %s", p.Name)
		g.Expect(p.Spec.NodeSelector).To(gomega.HaveKeyWithValue(devcluster.FakeNodeLabel, devcluster.FakeNodeLabelValue))
	}
	held := &musterv1.TrainingJob{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: waiting}, held)).To(gomega.Succeed())
	t.Logf("%s runs; %s waits: %s", running, waiting, held.Status.Condition(musterv1.ConditionSuspended).Message)

	// The first's end makes room for the second; both Workloads finish.
	for _, name := range names {
		framework.WaitJob(g, c, ns, name, jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	}
	dc := dynamicClient(g)
	g.Eventually(func(g gomega.Gomega) {
		list, err := dc.Resource(kueueResource("workloads")).Namespace(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(list.Items).To(gomega.HaveLen(2))
		for _, wl := range list.Items {
			g.Expect(kueue.Observe(&wl).Finished).To(gomega.BeTrue(), "workload %s", wl.GetName())
		}
	}, jobTimeout, time.Second).Should(gomega.Succeed())
}

func kueueResource(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
}

// kueueQueue makes a LocalQueue team-a in ns whose ClusterQueue has the 8
// GPUs of a flavor on the fake nodes; preemption, if set, is the
// ClusterQueue's policy. All of it goes when the test ends.
// queuedGPUTasks are fake tasks of 2 GPUs each that run for runFor, asking
// for their GPUs as requests too: Kueue counts requests.
func queuedGPUTasks(runFor time.Duration) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) {
		fakeGPUTasks(2, runFor)(p)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{devcluster.GPUResource: resource.MustParse("2")}
	}
}

func kueueQueue(t *testing.T, g gomega.Gomega, ns string, preemption map[string]any) {
	kueueQueueOn(t, g, ns, map[string]any{"nodeLabels": map[string]any{devcluster.FakeNodeLabel: devcluster.FakeNodeLabelValue}}, "8", preemption)
}

// kueueObject is a Kueue object of kind, cluster-scoped until given a
// namespace.
func kueueObject(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

// kueueQueueOn is kueueQueue with a ResourceFlavor of flavorSpec and gpus
// GPUs of quota.
func kueueQueueOn(t *testing.T, g gomega.Gomega, ns string, flavorSpec map[string]any, gpus string, preemption map[string]any) {
	ctx := context.Background()
	dc := dynamicClient(g)
	flavor, cq := ns+"-gpu", ns+"-cq"
	cqSpec := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{string(devcluster.GPUResource)},
			"flavors": []any{map[string]any{"name": flavor, "resources": []any{
				map[string]any{"name": string(devcluster.GPUResource), "nominalQuota": gpus},
			}}},
		}},
	}
	if preemption != nil {
		cqSpec["preemption"] = preemption
	}
	for _, o := range []struct {
		resource string
		obj      *unstructured.Unstructured
	}{
		{"resourceflavors", kueueObject("ResourceFlavor", flavor, flavorSpec)},
		{"clusterqueues", kueueObject("ClusterQueue", cq, cqSpec)},
	} {
		_, err := dc.Resource(kueueResource(o.resource)).Create(ctx, o.obj, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		name, r := o.obj.GetName(), o.resource
		t.Cleanup(func() { _ = dc.Resource(kueueResource(r)).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// When the test fails, say what Kueue made of the jobs' Workloads.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		list, err := dc.Resource(kueueResource("workloads")).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("listing the Workloads: %v", err)
			return
		}
		for _, w := range list.Items {
			spec, _, _ := unstructured.NestedMap(w.Object, "spec")
			delete(spec, "podSets")
			status, _, _ := unstructured.NestedMap(w.Object, "status")
			t.Logf("Workload %s: owners %v, spec %v, status %v", w.GetName(), w.GetOwnerReferences(), spec, status)
		}
	})
	lq := kueueObject("LocalQueue", "team-a", map[string]any{"clusterQueue": cq})
	lq.SetNamespace(ns)
	_, err := dc.Resource(kueueResource("localqueues")).Namespace(ns).Create(ctx, lq, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
}

// A higher-priority TrainingJob preempts a running lower one through Kueue:
// the victim's Workload is evicted, its pods go, it waits Suspended with
// nothing charged, and once the preemptor is done Kueue admits it again and
// it runs to success. Alone in the fake-node lane: it needs the fake nodes'
// GPUs.
func TestKueuePreemptsALowerPriorityTrainingJob(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	kueueQueue(t, g, ns, map[string]any{"withinClusterQueue": "LowerPriority"})
	for name, value := range map[string]int32{ns + "-low": 100, ns + "-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		g.Expect(c.Create(ctx, pc)).To(gomega.Succeed())
		t.Cleanup(func() { _ = c.Delete(context.Background(), pc) })
	}
	job := func(name, priority string, runFor time.Duration) *musterv1.TrainingJob {
		j := testutil.MakeJob(name, ns).Role("worker", 4).RestartPolicy(musterv1.RestartPolicyOnFailure).
			Scheduling(musterv1.Scheduling{PriorityClassName: priority}).
			Template(queuedGPUTasks(runFor)).Obj()
		j.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
		return j
	}
	g.Expect(c.Create(ctx, job("low", ns+"-low", 40*time.Second))).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "low", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))

	g.Expect(c.Create(ctx, job("high", ns+"-high", 10*time.Second))).To(gomega.Succeed())
	evicted := framework.WaitJob(g, c, ns, "low", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.IsTrue(musterv1.ConditionSuspended)).To(gomega.BeTrue(), "conditions %+v", j.Status.Conditions)
		g.Expect(j.Status.Condition(musterv1.ConditionSuspended).Reason).To(gomega.BeElementOf(string(musterv1.ReasonEvicted), string(musterv1.ReasonWaitingForAdmission)))
	})
	t.Logf("low: %s", evicted.Status.Condition(musterv1.ConditionSuspended).Message)
	framework.WaitJob(g, c, ns, "high", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))

	// The preemptor finishes; the victim is admitted again and succeeds,
	// its preemption charged to nothing.
	framework.WaitJob(g, c, ns, "high", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	got := framework.WaitJob(g, c, ns, "low", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Restarts.Accountable).To(gomega.BeZero(), "restarts %+v", got.Status.Restarts)
}

// An elastic TrainingJob (kueue.x-k8s.io/elastic-job) under Kueue is
// resized without stopping, through Kueue's workload slices: admitted at
// 2 pods of 2 GPUs beside another job of 4 GPUs, it is scaled to 4 with
// `muster scale` and keeps running at 2, the same pods, until the other
// job's deletion frees the quota; Kueue then admits its slice and two pods
// join the two that never stopped. Scaled to 3, its Workload hands one
// pod's quota back in place. Alone in the fake-node lane. The other job
// holds its quota until the test deletes it: an end after a set time
// would race the steps before the scale on a loaded machine.
func TestKueueGrowsAnElasticJobWithoutStoppingIt(t *testing.T) {
	fakeNodes.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	musterCLI := muster(t)
	kueueQueue(t, g, ns, nil)
	queued := func(job *musterv1.TrainingJob) *musterv1.TrainingJob {
		job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
		return job
	}
	other := queued(testutil.MakeJob("other", ns).Role("worker", 2).Template(queuedGPUTasks(10 * time.Minute)).Obj())
	g.Expect(c.Create(ctx, other)).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "other", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
	grow := queued(testutil.MakeJob("grow", ns).Role("worker", 2).Scalable(1, 4).Template(queuedGPUTasks(10 * time.Minute)).Obj())
	grow.Annotations = map[string]string{kueue.AnnotationElasticJob: "true"}
	g.Expect(c.Create(ctx, grow)).To(gomega.Succeed())
	framework.WaitJob(g, c, ns, "grow", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))

	podsOf := func(g gomega.Gomega) map[string]types.UID {
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{musterv1.LabelJobName: "grow"})).To(gomega.Succeed())
		out := map[string]types.UID{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				g.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodRunning), "%s", p.Name)
				out[p.Name] = p.UID
			}
		}
		return out
	}
	var first map[string]types.UID
	g.Eventually(func(g gomega.Gomega) { first = podsOf(g); g.Expect(first).To(gomega.HaveLen(2)) }, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	stillRunning := func(g gomega.Gomega, now map[string]types.UID, before map[string]types.UID) {
		for name, uid := range before {
			g.Expect(now).To(gomega.HaveKeyWithValue(name, uid), "%s was stopped or replaced", name)
		}
	}
	scale := func(n string) {
		cmd := exec.Command(musterCLI, "scale", "grow", "--replicas", n, "-n", ns)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig())
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(gomega.HaveOccurred(), "muster scale: %s", out)
	}

	// Grown to 4 while the other job holds 4 of the 8 GPUs: it runs on at
	// 2, the same pods, its slice waiting for Kueue.
	scale("4")
	g.Consistently(func(g gomega.Gomega) {
		now := podsOf(g)
		g.Expect(now).To(gomega.HaveLen(2))
		stillRunning(g, now, first)
	}, 5*time.Second, 500*time.Millisecond).Should(gomega.Succeed())
	j := &musterv1.TrainingJob{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grow"}, j)).To(gomega.Succeed())
	g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))

	// The other's deletion frees the quota: two pods join the two that ran on.
	g.Expect(c.Delete(ctx, other)).To(gomega.Succeed())
	var grown map[string]types.UID
	g.Eventually(func(g gomega.Gomega) {
		grown = podsOf(g)
		g.Expect(grown).To(gomega.HaveLen(4))
		stillRunning(g, grown, first)
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	j = framework.WaitJob(g, c, ns, "grow", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Replicas).To(gomega.Equal(int32(4)))
		g.Expect(j.Status.Scheduling.Workload).To(gomega.Equal(kueue.SliceName(j)))
	})

	// Shrunk to 3: one pod goes, the Workload's count goes down in place.
	scale("3")
	g.Eventually(func(g gomega.Gomega) {
		now := podsOf(g)
		g.Expect(now).To(gomega.HaveLen(3))
		for name, uid := range now {
			g.Expect(grown).To(gomega.HaveKeyWithValue(name, uid), "%s is new", name)
		}
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		wl, err := dynamicClient(g).Resource(kueueResource("workloads")).Namespace(ns).Get(ctx, j.Status.Scheduling.Workload, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(kueue.Counts(wl)).To(gomega.Equal(map[string]int64{"worker": 3}))
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grow"}, j)).To(gomega.Succeed())
	g.Expect(j.Status.Restarts.Total).To(gomega.BeZero())
}
