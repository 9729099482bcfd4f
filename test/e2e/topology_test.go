package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/queue/kueue"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

// The node labels of the topology tests' nodes: two blocks of two racks,
// one node of 4 GPUs per rack; the pool label and taint keep each test's
// nodes to its own pods, and other tests' pods off them.
const (
	blockLabel = "e2e.muster.dev/block"
	rackLabel  = "e2e.muster.dev/rack"
	poolLabel  = "e2e.muster.dev/pool"
)

// topologyNodes makes the test's four KWOK nodes and returns each node's
// block. They go when the test ends.
func topologyNodes(t *testing.T, g gomega.Gomega, ns string) map[string]string {
	ctx := context.Background()
	blocks := map[string]string{}
	for _, block := range []string{"a", "b"} {
		for rack := range 2 {
			name := fmt.Sprintf("%s-%s%d", ns, block, rack)
			node := devcluster.FakeNode(name, 4)
			maps.Copy(node.Labels, map[string]string{poolLabel: ns, blockLabel: block, rackLabel: fmt.Sprintf("%s%d", block, rack)})
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: poolLabel, Value: ns, Effect: corev1.TaintEffectNoSchedule})
			_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			g.Expect(err).NotTo(gomega.HaveOccurred())
			t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
			blocks[name] = block
		}
	}
	// KWOK makes them Ready; the schedulers and Kueue place on them only
	// then.
	g.Eventually(func(g gomega.Gomega) {
		for name := range blocks {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(gomega.HaveOccurred())
			ready := false
			for _, c := range n.Status.Conditions {
				ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
			}
			g.Expect(ready).To(gomega.BeTrue(), "node %s", name)
		}
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	return blocks
}

// poolTasks are fake tasks of 2 GPUs (requested, for Kueue) that run for
// 10 minutes on the test's own nodes.
func poolTasks(ns string) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) {
		queuedGPUTasks(10 * time.Minute)(p)
		p.Spec.NodeSelector = map[string]string{poolLabel: ns}
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: poolLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
}

// tasQueue is a LocalQueue team-a whose flavor is the test's nodes with a
// Kueue Topology of block, rack and host; its quota (32 GPUs) is more than
// the nodes have, so only where there is room holds a job back.
func tasQueue(t *testing.T, g gomega.Gomega, ns string) {
	dc := dynamicClient(g)
	topo := kueueObject("Topology", ns, map[string]any{"levels": []any{
		map[string]any{"nodeLabel": blockLabel}, map[string]any{"nodeLabel": rackLabel}, map[string]any{"nodeLabel": "kubernetes.io/hostname"},
	}})
	_, err := dc.Resource(kueueResource("topologies")).Create(context.Background(), topo, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		_ = dc.Resource(kueueResource("topologies")).Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	kueueQueueOn(t, g, ns, map[string]any{
		"nodeLabels":   map[string]any{poolLabel: ns},
		"topologyName": ns,
		"tolerations": []any{
			map[string]any{"key": poolLabel, "operator": "Exists", "effect": "NoSchedule"},
			map[string]any{"key": devcluster.FakeNodeTaintKey, "operator": "Exists", "effect": "NoSchedule"},
		},
	}, "32", nil)
}

// jobBlocks waits until every pod of the job is on a node and returns
// how many are in each block.
func jobBlocks(g gomega.Gomega, ns, job string, pods int, blocks map[string]string) map[string]int {
	var out map[string]int
	g.Eventually(func(g gomega.Gomega) {
		var list corev1.PodList
		g.Expect(cluster.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{musterv1.LabelJobName: job})).To(gomega.Succeed())
		out = map[string]int{}
		n := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			g.Expect(p.Spec.NodeName).NotTo(gomega.BeEmpty(), "pod %s is not placed", p.Name)
			out[blocks[p.Spec.NodeName]]++
			n++
		}
		g.Expect(n).To(gomega.Equal(pods))
	}, jobTimeout, 500*time.Millisecond).Should(gomega.Succeed())
	return out
}

// onlyBlock is the one block of a placement, failing on a placement that
// spans more.
func onlyBlock(g gomega.Gomega, placed map[string]int) string {
	g.Expect(placed).To(gomega.HaveLen(1), "placed across blocks: %v", placed)
	for b := range placed {
		return b
	}
	return ""
}

// A required topology through Kueue's topology-aware scheduling: each job
// lands within one block, and a job that fits in no single block waits,
// with no pods, although the two blocks together have room for it.
func TestKueueRequiredTopologyPlacesAJobInOneBlockOrHoldsIt(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	blocks := topologyNodes(t, g, ns)
	tasQueue(t, g, ns)
	checkRequiredTopology(t, g, ns, blocks, func(job *musterv1.TrainingJob) {
		job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
		job.Spec.Roles[0].Topology = musterv1.Topology{Level: blockLabel, Mode: musterv1.TopologyRequired}
	}, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		cond := j.Status.Condition(musterv1.ConditionSuspended)
		g.Expect(cond).NotTo(gomega.BeNil())
		g.Expect(cond.Reason).To(gomega.Equal(string(musterv1.ReasonWaitingForAdmission)))
		g.Expect(cond.Message).To(gomega.ContainSubstring("topology"))
	})
}

// The same through the Kubernetes scheduler's own gang scheduling, with
// the PodGroup's topology constraint: the gang waits unscheduled.
func TestNativeGangRequiredTopologyPlacesAJobInOneBlockOrHoldsIt(t *testing.T) {
	checkGangTopology(t, musterv1.GangNative, false, nil, musterv1.ReasonGangUnschedulable)
}

// The same through Volcano's network topology: the blocks are HyperNodes
// of a tier named after the block label, as Volcano's label discovery
// names them, and the PodGroup's hard network topology keeps a gang
// within one.
func TestVolcanoRequiredTopologyPlacesAJobInOneBlockOrHoldsIt(t *testing.T) {
	checkGangTopology(t, musterv1.GangVolcano, false, hyperNodes, musterv1.ReasonGangUnschedulable, musterv1.ReasonGangPending)
}

// A role's own request through Volcano: a subgroup of the PodGroup, held
// within one HyperNode of the block tier as the job-wide one is.
func TestVolcanoRoleTopologyPlacesARoleInOneBlockOrHoldsIt(t *testing.T) {
	checkGangTopology(t, musterv1.GangVolcano, true, hyperNodes, musterv1.ReasonGangUnschedulable, musterv1.ReasonGangPending)
}

// checkGangTopology is checkRequiredTopology for a Required request
// through a gang backend, job-wide or (perRole) the role's own, on the
// test's nodes once setup (if any) has run: the waiting job's gang is not
// scheduled, for one of reasons.
func checkGangTopology(t *testing.T, backend musterv1.GangBackend, perRole bool, setup func(*testing.T, gomega.Gomega, string, map[string]string),
	reasons ...musterv1.ConditionReason) {
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	blocks := topologyNodes(t, g, ns)
	if setup != nil {
		setup(t, g, ns, blocks)
	}
	checkRequiredTopology(t, g, ns, blocks, func(job *musterv1.TrainingJob) {
		job.Spec.Scheduling = musterv1.Scheduling{Backend: backend}
		if perRole {
			job.Spec.Roles[0].Topology = musterv1.Topology{Level: blockLabel, Mode: musterv1.TopologyRequired}
		} else {
			job.Spec.Scheduling.Topology = musterv1.Topology{Level: blockLabel, Mode: musterv1.TopologyRequired}
		}
	}, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		cond := apimeta.FindStatusCondition(j.Status.Conditions, string(musterv1.ConditionGangScheduled))
		g.Expect(cond).NotTo(gomega.BeNil())
		g.Expect(cond.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(reasons).To(gomega.ContainElement(musterv1.ConditionReason(cond.Reason)))
	})
}

// hyperNodes makes a Volcano HyperNode of tier 1 per block of the test's
// nodes, its tier named after the block label. They go when the test
// ends.
func hyperNodes(t *testing.T, g gomega.Gomega, ns string, blocks map[string]string) {
	dc := dynamicClient(g)
	gvr := schema.GroupVersionResource{Group: "topology.volcano.sh", Version: "v1alpha1", Resource: "hypernodes"}
	members := map[string][]any{}
	for node, block := range blocks {
		members[block] = append(members[block], map[string]any{"type": "Node", "selector": map[string]any{"exactMatch": map[string]any{"name": node}}})
	}
	for block, m := range members {
		name := ns + "-" + block
		hn := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"tier": int64(1), "tierName": blockLabel, "members": m},
		}}
		_, err := dc.Resource(gvr).Create(context.Background(), hn, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		t.Cleanup(func() { _ = dc.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

// checkRequiredTopology runs three jobs of 2-GPU tasks, each asking (by
// ask) for its tasks within one block, on two blocks of 8 GPUs: 3 tasks
// land in one block, 3 more in the other, and then 2 fit in neither
// block (one task's room is left in each): that job waits, as waiting
// says, with no pod placed, until the first job is deleted, and then
// lands in the first job's block.
func checkRequiredTopology(t *testing.T, g gomega.Gomega, ns string, blocks map[string]string,
	ask func(*musterv1.TrainingJob), waiting func(gomega.Gomega, *musterv1.TrainingJob)) {
	ctx := context.Background()
	c := cluster.Client
	create := func(name string, tasks int32) {
		job := testutil.MakeJob(name, ns).Role("worker", tasks).Template(poolTasks(ns)).Obj()
		ask(job)
		g.Expect(c.Create(ctx, job)).To(gomega.Succeed())
	}
	create("first", 3)
	first := onlyBlock(g, jobBlocks(g, ns, "first", 3, blocks))
	create("second", 3)
	second := onlyBlock(g, jobBlocks(g, ns, "second", 3, blocks))
	g.Expect(second).NotTo(gomega.Equal(first), "the first's block has room for one more task only")

	create("third", 2)
	j := framework.WaitJob(g, c, ns, "third", jobTimeout, waiting)
	var pods corev1.PodList
	g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{musterv1.LabelJobName: "third"})).To(gomega.Succeed())
	for _, p := range pods.Items {
		g.Expect(p.Spec.NodeName).To(gomega.BeEmpty(), "pod %s of the waiting job is placed", p.Name)
	}
	t.Logf("third waits: %+v", j.Status.Conditions)

	g.Expect(c.Delete(ctx, &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}})).To(gomega.Succeed())
	g.Expect(onlyBlock(g, jobBlocks(g, ns, "third", 2, blocks))).To(gomega.Equal(first))
}

// A preferred topology through Kueue packs: 5 tasks of 2 GPUs do not fit
// in a block of 8 and run spread over both, but 4 of them in one block,
// not spread as evenly as the nodes allow.
func TestKueuePreferredTopologyPacksAJob(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	blocks := topologyNodes(t, g, ns)
	tasQueue(t, g, ns)
	job := testutil.MakeJob("packed", ns).Role("worker", 5).Template(poolTasks(ns)).
		RoleTopology(blockLabel, musterv1.TopologyPreferred).Obj()
	job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	g.Expect(cluster.Client.Create(context.Background(), job)).To(gomega.Succeed())
	placed := jobBlocks(g, ns, "packed", 5, blocks)
	g.Expect(placed).To(gomega.ConsistOf(4, 1), "pods per block")
	framework.WaitJob(g, cluster.Client, ns, "packed", jobTimeout, framework.PhaseIs(musterv1.PhaseRunning))
}

// A preferred topology through Volcano's soft network topology packs as
// Kueue's does: 5 tasks of 2 GPUs, 4 of them in one block.
func TestVolcanoPreferredTopologyPacksAJob(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	blocks := topologyNodes(t, g, ns)
	hyperNodes(t, g, ns, blocks)
	job := testutil.MakeJob("packed", ns).Role("worker", 5).Template(poolTasks(ns)).Obj()
	job.Spec.Scheduling = musterv1.Scheduling{Backend: musterv1.GangVolcano,
		Topology: musterv1.Topology{Level: blockLabel, Mode: musterv1.TopologyPreferred}}
	g.Expect(cluster.Client.Create(context.Background(), job)).To(gomega.Succeed())
	g.Expect(jobBlocks(g, ns, "packed", 5, blocks)).To(gomega.ConsistOf(4, 1), "pods per block")
}
