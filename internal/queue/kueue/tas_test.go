package kueue_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/queue/kueue"
	"github.com/muster-dev/muster/internal/testutil"
)

// podSetRequests are the Desired Workload's topologyRequests by podSet.
func podSetRequests(t *testing.T, job *musterv1.TrainingJob) map[string]map[string]any {
	t.Helper()
	job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	wl, err := kueue.Desired(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	for _, s := range sets {
		m := s.(map[string]any)
		req, _ := m["topologyRequest"].(map[string]any)
		out[m["name"].(string)] = req
	}
	return out
}

func TestDesiredAsksKueueForEachPodSetsTopology(t *testing.T) {
	// Per role: each podSet its own level and mode, ranked by task index.
	got := podSetRequests(t, testutil.MakeJob("j", "ns").
		Role("ps", 2).RoleTopology("example.com/rack", musterv1.TopologyPreferred).
		Role("worker", 4).RoleTopology("example.com/block", musterv1.TopologyRequired).
		Role("evaluator", 1).Obj())
	if ps := got["ps"]; ps["preferred"] != "example.com/rack" || ps["required"] != nil || ps["podIndexLabel"] != musterv1.LabelTaskIndex || ps["podSetGroupName"] != nil {
		t.Errorf("ps request = %v", ps)
	}
	if w := got["worker"]; w["required"] != "example.com/block" || w["preferred"] != nil {
		t.Errorf("worker request = %v", w)
	}
	if got["evaluator"] != nil {
		t.Errorf("a role without a request asks for none: %v", got["evaluator"])
	}

	// Job-wide over a launcher and its workers: one group, both podSets.
	job := testutil.MakeJob("j", "ns").Role("launcher", 1).Role("worker", 4).Obj()
	job.Spec.Scheduling.Topology = musterv1.Topology{Level: "example.com/block", Mode: musterv1.TopologyRequired}
	got = podSetRequests(t, job)
	for _, role := range []string{"launcher", "worker"} {
		if r := got[role]; r["required"] != "example.com/block" || r["podSetGroupName"] != "j" || r["podIndexLabel"] != nil {
			t.Errorf("%s request = %v, want block required in group j, unranked", role, r)
		}
	}
	// Job-wide over one podSet: no group (Kueue wants groups of two).
	single := testutil.MakeJob("j", "ns").Role("worker", 4).Role("idle", 0).Obj()
	single.Spec.Scheduling.Topology = musterv1.Topology{Level: "example.com/block"}
	if r := podSetRequests(t, single)["worker"]; r["required"] != "example.com/block" || r["podSetGroupName"] != nil {
		t.Errorf("single podSet request = %v", r)
	}
}

// A changed topology request no longer matches the Workload Kueue
// admitted: the job is queued again with it.
func TestMatchesComparesTopology(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("worker", 4).RoleTopology("example.com/block", musterv1.TopologyRequired).Obj()
	job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	have, _ := kueue.Desired(job, nil)
	same, _ := kueue.Desired(job.DeepCopy(), nil)
	if !kueue.Matches(have, same) {
		t.Error("the same job must match")
	}
	job.Spec.Roles[0].Topology.Mode = musterv1.TopologyPreferred
	changed, _ := kueue.Desired(job, nil)
	if kueue.Matches(have, changed) {
		t.Error("a Workload asking for another topology must not match")
	}
}

// A podSet Kueue admitted with a topology assignment has its pods created
// gated, labelled and annotated so that Kueue's TopologyUngater places
// them; a podSet admitted without one is placed by its flavors alone.
func TestPodsOfATopologyAssignedPodSetAreGatedForKueue(t *testing.T) {
	wl := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"podSets": []any{
			map[string]any{"name": "worker", "count": int64(4), "topologyRequest": map[string]any{"required": "example.com/block"}},
			map[string]any{"name": "launcher", "count": int64(1)},
			map[string]any{"name": "ps", "count": int64(1)},
		}},
		"status": map[string]any{"admission": map[string]any{"clusterQueue": "cq", "podSetAssignments": []any{
			map[string]any{"name": "worker", "count": int64(4), "flavors": map[string]any{"cpu": "tas"},
				"topologyAssignment": map[string]any{"levels": []any{"example.com/block"}}},
			map[string]any{"name": "launcher", "count": int64(1), "flavors": map[string]any{"cpu": "tas"},
				"topologyAssignment": map[string]any{"levels": []any{"example.com/block"}}},
			map[string]any{"name": "ps", "count": int64(1), "flavors": map[string]any{"cpu": "tas"}},
		}}},
	}}
	wl.SetName("trainingjob-j-abcde")
	placements, err := kueue.Placements(kueue.Observe(wl), map[string]*unstructured.Unstructured{
		"tas": {Object: map[string]any{"spec": map[string]any{"nodeLabels": map[string]any{"pool": "tas"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(role string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Labels = map[string]string{musterv1.LabelRole: role}
		kueue.Place(p, placements[role])
		return p
	}
	gated := func(p *corev1.Pod) bool {
		return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == kueue.TopologyGate })
	}
	w := pod("worker")
	if !gated(w) || w.Labels[kueue.LabelPodSet] != "worker" || w.Annotations[kueue.AnnotationWorkload] != "trainingjob-j-abcde" ||
		w.Annotations[kueue.AnnotationRequiredTopology] != "example.com/block" || w.Spec.NodeSelector["pool"] != "tas" {
		t.Errorf("worker pod = %+v %+v", w.ObjectMeta, w.Spec)
	}
	// Placed by topology without a request of its own (a flavor with a
	// Topology): marked unconstrained, so the ungater still takes it.
	if l := pod("launcher"); !gated(l) || l.Annotations[kueue.AnnotationUnconstrainedTopology] != "true" {
		t.Errorf("launcher pod = %+v", l.ObjectMeta)
	}
	if p := pod("ps"); gated(p) || p.Annotations[kueue.AnnotationWorkload] != "" {
		t.Errorf("a podSet without a topology assignment is not gated: %+v %+v", p.ObjectMeta, p.Spec.SchedulingGates)
	}
}
