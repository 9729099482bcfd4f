package devcluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Fake node markers. KWOK manages only nodes with the annotation; the taint
// keeps real pods (which nobody would run) off them, so only pods that
// tolerate it, such as scale tests' pods, land there.
const (
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
	FakeNodeValue      = "fake"
	FakeNodeTaintKey   = "kwok.x-k8s.io/node"
	FakeNodeLabel      = "type"
	FakeNodeLabelValue = "kwok"
	GPUResource        = corev1.ResourceName("nvidia.com/gpu")
)

func (c *Config) kwokConfigPath() string { return c.path("kwok", "kwok.yaml") }

func (c *Config) kwokComponent(bin string) component {
	return component{
		name: "kwok",
		bin:  bin,
		args: []string{
			"--kubeconfig=" + c.componentKubeconfig("kwok"),
			"--config=" + c.kwokConfigPath(),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=" + FakeNodeValue,
			"--cidr=" + KWOKPodCIDR,
			"--node-ip=" + firstIP(KWOKPodCIDR).String(),
			"--node-lease-duration-seconds=40",
			fmt.Sprintf("--server-address=127.0.0.1:%d", c.Ports.KWOK),
		},
		addr:   fmt.Sprintf("127.0.0.1:%d", c.Ports.KWOK),
		listen: []listenAddr{tcp(c.Ports.KWOK)},
		ready:  httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", c.Ports.KWOK)),
	}
}

// FakeNodeName is the name of the i-th fake node.
func FakeNodeName(i int) string { return fmt.Sprintf("kwok-node-%03d", i) }

// fakeNode is the i-th of the cluster's own fake nodes: FakeNode with the
// label reconcileFakeNodes finds them by.
func fakeNode(i, gpus int) *corev1.Node {
	n := FakeNode(FakeNodeName(i), gpus)
	n.Labels[FakeNodeLabel] = FakeNodeLabelValue
	return n
}

// FakeNode is a node KWOK manages, with room for many pods and gpus GPUs,
// tainted so that only pods tolerating fake nodes land there. KWOK keeps
// the status given at creation, so capacity is set here.
func FakeNode(name string, gpus int) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if gpus > 0 {
		capacity[GPUResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				FakeNodeAnnotation:             FakeNodeValue,
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: FakeNodeTaintKey, Value: FakeNodeValue, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy(),
			DeclaredFeatures: slices.Clone(FakeNodeDeclaredFeatures)},
	}
}

// FakeNodeDeclaredFeatures are the features a fake node declares, as a
// kubelet 1.36 does: the scheduler places a pod that restarts all its
// containers in place only on a node that declares it, and the
// pod-restart-in-place stage does it.
var FakeNodeDeclaredFeatures = []string{"RestartAllContainersOnContainerExits"}

// reconcileFakeNodes makes exactly n fake nodes exist with gpus GPUs each.
func reconcileFakeNodes(ctx context.Context, cs kubernetes.Interface, n, gpus int) error {
	existing, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FakeNodeLabel + "=" + FakeNodeLabelValue})
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		want[FakeNodeName(i)] = true
	}
	for _, node := range existing.Items {
		if want[node.Name] && node.Status.Capacity.Name(GPUResource, resource.DecimalSI).Value() == int64(gpus) &&
			slices.Equal(node.Status.DeclaredFeatures, FakeNodeDeclaredFeatures) {
			delete(want, node.Name)
			continue
		}
		// A node of the wrong size is replaced; a surplus one removed.
		if err := cs.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	for i := 0; i < n; i++ {
		if !want[FakeNodeName(i)] {
			continue
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(i, gpus), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating fake node %s: %w", FakeNodeName(i), err)
		}
	}
	return nil
}
