package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func TestPodJobIsTheJobItsLabelNames(t *testing.T) {
	labelled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{musterv1.LabelJobName: "mnist"}}}
	if got := podJob(labelled); len(got) != 1 || got[0] != "mnist" {
		t.Errorf("podJob(a pod of job mnist) = %v, want [mnist]", got)
	}
	if got := podJob(&corev1.Pod{}); got != nil {
		t.Errorf("podJob(a pod of no job) = %v, want none", got)
	}
}

// The indexed lister hands out the cache's own pods, and only the job's:
// not a same-named job's in another namespace, nor a pod without the label.
func TestIndexedListerReadsTheCachesOwnPods(t *testing.T) {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{podJobIndex: podJobKeys})
	pod := func(ns, name, job string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if job != "" {
			p.Labels = map[string]string{musterv1.LabelJobName: job}
		}
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a0, a1 := pod("ns", "a-0", "a"), pod("ns", "a-1", "a")
	pod("ns", "b-0", "b")
	pod("other", "a-0", "a")
	pod("ns", "loose", "")

	got, err := listIndexed(indexer)(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("listed %d pods, want job a's 2 in ns", len(got))
	}
	for _, p := range got {
		if p != a0 && p != a1 {
			t.Errorf("listed %s/%s (%p): not one of the cache's own pods of job a", p.Namespace, p.Name, p)
		}
	}
}
