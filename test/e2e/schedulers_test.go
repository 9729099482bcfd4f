package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

// The gang schedulers and Kueue that `muster-dev up --scheduler ... --kueue`
// runs do what they are for on this cluster: objects created by another
// program (as Muster will create them) are acted on.

func dynamicClient(g gomega.Gomega) dynamic.Interface {
	cfg, err := cluster.RESTConfig()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	dc, err := dynamic.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return dc
}

// gangPod is a pod of a gang on the fake GPU nodes.
func gangPod(ns, name, schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			NodeSelector:  map[string]string{devcluster.FakeNodeLabel: devcluster.FakeNodeLabelValue},
			Tolerations:   []corev1.Toleration{{Key: devcluster.FakeNodeTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name: "trainer", Image: "fake",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{devcluster.GPUResource: resource.MustParse("1")}},
			}},
		},
	}
}

// checkGang creates a PodGroup of minMember 3 and two of its pods: neither
// may be bound. Lowered to minMember 2, both run.
func checkGang(t *testing.T, podGroups schema.GroupVersionResource, podGroup func(ns string) *unstructured.Unstructured, pod func(ns, name string) *corev1.Pod) {
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	pgs := dynamicClient(g).Resource(podGroups).Namespace(ns)
	_, err := pgs.Create(ctx, podGroup(ns), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	for _, name := range []string{"rank-0", "rank-1"} {
		createPod(g, pod(ns, name))
	}
	bound := func() int {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	g.Consistently(bound, 15*time.Second, time.Second).Should(gomega.BeZero(), "a partial gang was bound")

	_, err = pgs.Patch(ctx, "gang", types.MergePatchType, []byte(`{"spec":{"minMember":2}}`), metav1.PatchOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	for _, name := range []string{"rank-0", "rank-1"} {
		// Coscheduling may need a periodic retry (every 30s here, see
		// docs/local-schedulers.md) after the update.
		p := framework.WaitPodPhase(g, cs, ns, name, corev1.PodRunning, 2*time.Minute)
		g.Expect(p.Spec.NodeName).To(gomega.HavePrefix("kwok-node-"))
	}
	// The gang object says so too (Volcano's scheduler, scheduler-plugins'
	// PodGroup controller).
	g.Eventually(func(g gomega.Gomega) string {
		pg, err := pgs.Get(ctx, "gang", metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
		return phase
	}, time.Minute, time.Second).Should(gomega.Equal("Running"))
}

func TestCoschedulingGang(t *testing.T) {
	fakeNodes.shared(t)
	checkGang(t, schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"},
		func(ns string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
				"metadata": map[string]any{"name": "gang", "namespace": ns},
				"spec":     map[string]any{"minMember": int64(3), "scheduleTimeoutSeconds": int64(600)},
			}}
		},
		func(ns, name string) *corev1.Pod {
			p := gangPod(ns, name, devcluster.CoschedulingSchedulerName)
			p.Labels = map[string]string{"scheduling.x-k8s.io/pod-group": "gang"}
			return p
		})
}

func TestVolcanoGang(t *testing.T) {
	fakeNodes.shared(t)
	checkGang(t, schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"},
		func(ns string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
				"metadata": map[string]any{"name": "gang", "namespace": ns},
				"spec":     map[string]any{"minMember": int64(3), "queue": devcluster.VolcanoDefaultQueue},
			}}
		},
		func(ns, name string) *corev1.Pod {
			p := gangPod(ns, name, devcluster.VolcanoSchedulerName)
			p.Annotations = map[string]string{"scheduling.k8s.io/group-name": "gang"}
			return p
		})
}

// Kueue admits a queued Job within its ClusterQueue's quota, injecting the
// flavor's node labels, and keeps one over quota suspended.
func TestKueueAdmission(t *testing.T) {
	fakeNodes.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	dc := dynamicClient(g)
	kueue := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
	}
	obj := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	flavor, queue := ns+"-flavor", ns+"-cq"
	for _, c := range []struct {
		resource string
		obj      *unstructured.Unstructured
	}{
		{"resourceflavors", obj("ResourceFlavor", flavor, map[string]any{
			"nodeLabels": map[string]any{devcluster.FakeNodeLabel: devcluster.FakeNodeLabelValue},
		})},
		{"clusterqueues", obj("ClusterQueue", queue, map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu"},
				"flavors": []any{map[string]any{"name": flavor, "resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": "2"},
				}}},
			}},
		})},
	} {
		_, err := dc.Resource(kueue(c.resource)).Create(ctx, c.obj, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		name, res := c.obj.GetName(), c.resource
		t.Cleanup(func() { _ = dc.Resource(kueue(res)).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	lq := obj("LocalQueue", "queue", map[string]any{"clusterQueue": queue})
	lq.SetNamespace(ns)
	_, err := dc.Resource(kueue("localqueues")).Namespace(ns).Create(ctx, lq, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	job := func(name, cpu string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"kueue.x-k8s.io/queue-name": "queue"}},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](1),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Tolerations:   []corev1.Toleration{{Key: devcluster.FakeNodeTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers: []corev1.Container{{Name: "c", Image: "fake",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
				}},
			},
		}
	}
	for _, j := range []*batchv1.Job{job("fits", "1"), job("too-big", "4")} {
		created, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(created.Spec.Suspend).To(gomega.HaveValue(gomega.BeTrue()), "Kueue's webhook did not suspend %s", j.Name)
	}
	g.Eventually(func(g gomega.Gomega) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "fits", metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(j.Spec.Suspend).To(gomega.HaveValue(gomega.BeFalse()))
		g.Expect(j.Spec.Template.Spec.NodeSelector).To(gomega.HaveKeyWithValue(devcluster.FakeNodeLabel, devcluster.FakeNodeLabelValue))
	}, 60*time.Second, time.Second).Should(gomega.Succeed(), "the job within quota was not admitted")
	g.Consistently(func() bool {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "too-big", metav1.GetOptions{})
		return err == nil && ptr.Deref(j.Spec.Suspend, false)
	}, 5*time.Second, time.Second).Should(gomega.BeTrue(), "the job over quota was started")
	workloads, err := dc.Resource(kueue("workloads")).Namespace(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(workloads.Items).To(gomega.HaveLen(2), fmt.Sprintf("Kueue made %d workloads for 2 jobs", len(workloads.Items)))
}
