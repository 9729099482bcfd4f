package devcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

func TestFakeNodeIsAnnotatedTaintedAndHasGPUs(t *testing.T) {
	n := fakeNode(7, 8)
	if n.Name != "kwok-node-007" || n.Annotations["kwok.x-k8s.io/node"] != "fake" || n.Labels["type"] != "kwok" {
		t.Errorf("identity: %s %v %v", n.Name, n.Annotations, n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "kwok.x-k8s.io/node" || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints: %v", n.Spec.Taints)
	}
	for _, rl := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		if gpu := rl[GPUResource]; gpu.Value() != 8 {
			t.Errorf("gpus = %s", gpu.String())
		}
		if pods := rl[corev1.ResourcePods]; pods.Value() != 110 {
			t.Errorf("pods = %s", pods.String())
		}
	}
	if _, ok := fakeNode(0, 0).Status.Capacity[GPUResource]; ok {
		t.Error("a node without GPUs advertises nvidia.com/gpu")
	}
}

func TestReconcileFakeNodes(t *testing.T) {
	ctx := context.Background()
	real := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ProcNodeName}}
	cs := fake.NewClientset(real, fakeNode(0, 4), fakeNode(5, 8))
	if err := reconcileFakeNodes(ctx, cs, 3, 8); err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
		if n.Name != ProcNodeName {
			if gpu := n.Status.Capacity[GPUResource]; gpu.Value() != 8 {
				t.Errorf("%s has %s GPUs", n.Name, gpu.String())
			}
		}
	}
	if got := strings.Join(names, ","); got != "kwok-node-000,kwok-node-001,kwok-node-002,muster-procnode" {
		t.Errorf("nodes = %s", got)
	}
}

// stockStages stands in for the kwok module's stage files.
func stockStages() map[string]string {
	m := map[string]string{}
	for _, f := range kwokStageFiles {
		name := f[strings.LastIndex(f, "/")+1 : len(f)-len(".yaml")]
		m[f] = "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: " + name +
			"\nspec:\n  resourceRef:\n    apiGroup: v1\n    kind: Pod\n  selector:\n    matchExpressions:\n    - key: '.metadata.deletionTimestamp'\n      operator: 'Exists'\n  next:\n    delete: true\n"
	}
	return m
}

func TestKWOKConfigHasStockStagesAndTheAnnotatedCompletion(t *testing.T) {
	out, err := kwokConfig(stockStages())
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out, "---\n")
	if len(docs) != 1+len(kwokStageFiles)+2 {
		t.Fatalf("got %d documents", len(docs))
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatalf("invalid YAML: %v\n%s", err, d)
		}
		byName[u.GetKind()+"/"+u.GetName()] = u
	}
	cfg := byName["KwokConfiguration/"]
	if cfg == nil {
		t.Fatal("no KwokConfiguration")
	}
	if p, _, _ := unstructured.NestedFieldNoCopy(cfg.Object, "options", "podPlayStageParallelism"); p != float64(32) {
		t.Errorf("podPlayStageParallelism = %v", p)
	}
	del := byName["Stage/pod-delete"]
	exprs, _, _ := unstructured.NestedSlice(del.Object, "spec", "selector", "matchExpressions")
	if len(exprs) != 2 || !strings.Contains(docs[len(docs)-3], "deletionGracePeriodSeconds") {
		t.Errorf("pod-delete does not skip grace-0 deletions: %v", exprs)
	}
	complete := byName["Stage/pod-complete"]
	exprs, _, _ = unstructured.NestedSlice(complete.Object, "spec", "selector", "matchExpressions")
	if len(exprs) != 2 || !strings.Contains(fmt.Sprint(exprs[0]), KWOKKeepRunningLabel) {
		t.Errorf("pod-complete finishes pods labelled to keep running: %v", exprs)
	}
	done := byName["Stage/pod-complete-annotated"]
	if done == nil {
		t.Fatal("no pod-complete-annotated stage")
	}
	jitter, _, _ := unstructured.NestedString(done.Object, "spec", "delay", "jitterDurationFrom", "expressionFrom")
	if !strings.Contains(jitter, KWOKCompleteDelayAnnotation) {
		t.Errorf("jitter must come from the delay annotation (it is the real wait): %q", jitter)
	}
	if byName["Stage/pod-restart-in-place"] == nil {
		t.Error("no pod-restart-in-place stage")
	}
	if _, err := kwokConfig(map[string]string{}); err == nil {
		t.Error("missing stock stages not reported")
	}
}
