package volcano_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/gang/volcano"
	"github.com/muster-dev/muster/internal/testutil"
)

func withRequests(cpu, gpu string) func(*corev1.PodTemplateSpec) {
	return func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpu)},
		}
	}
}

func TestMinResourcesCountsEachRolesMinimumFirst(t *testing.T) {
	job := testutil.MakeJob("j", "ns").
		Role("ps", 2).Template(withRequests("1", "0")).
		Role("trainer", 4).Template(withRequests("2", "1")).Obj()
	job.Spec.Scheduling.Roles = []musterv1.RoleScheduling{{Name: "trainer", MinAvailable: 2}}
	job.Spec.Scheduling.MinAvailable = 3
	g := gang.For(job, musterv1.GangVolcano, 0)
	got := volcano.MinResources(job, g)
	// 2 trainers first (their minimum), then 1 pserver in spec order.
	if cpu := got[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("5")) != 0 {
		t.Errorf("cpu = %s, want 5", cpu.String())
	}
	if gpu := got["nvidia.com/gpu"]; gpu.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("gpu = %s, want 2 (limits stand in for unset requests)", gpu.String())
	}
}

func TestObservePendingWaitsInTheQueue(t *testing.T) {
	b := volcano.Backend{SchedulerName: "volcano"}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"spec":   map[string]any{"queue": "research"},
		"status": map[string]any{"phase": "Pending"},
	}}
	st := b.Observe(pg)
	if st.Admitted || st.Reason != string(musterv1.ReasonGangQueued) {
		t.Errorf("Pending: got %+v, want not admitted, Queued", st)
	}
	_ = unstructured.SetNestedField(pg.Object, "Inqueue", "status", "phase")
	_ = unstructured.SetNestedSlice(pg.Object, []any{map[string]any{"type": "Unschedulable", "status": "True", "message": "0/2 nodes are available"}}, "status", "conditions")
	st = b.Observe(pg)
	if !st.Admitted || st.Scheduled == nil || *st.Scheduled || st.Reason != string(musterv1.ReasonGangUnschedulable) || st.Message != "0/2 nodes are available" {
		t.Errorf("Inqueue and unschedulable: got %+v", st)
	}
	_ = unstructured.SetNestedField(pg.Object, "Running", "status", "phase")
	_ = unstructured.SetNestedSlice(pg.Object, nil, "status", "conditions")
	if st = b.Observe(pg); !st.Admitted || st.Scheduled == nil || !*st.Scheduled {
		t.Errorf("Running: got %+v", st)
	}
}

func TestDecorateNamesGroupTaskAndScheduler(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("w", 2).Obj()
	job.Spec.Scheduling.PriorityClassName = "high"
	g := gang.For(job, musterv1.GangVolcano, 1)
	pod := &corev1.Pod{}
	pod.Labels = map[string]string{musterv1.LabelRole: "w"}
	volcano.Backend{SchedulerName: "volcano"}.Decorate(pod, g)
	if pod.Annotations[volcano.AnnotationGroupName] != "j-1" || pod.Annotations[volcano.AnnotationTaskSpec] != "w" ||
		pod.Spec.SchedulerName != "volcano" || pod.Spec.PriorityClassName != "high" {
		t.Errorf("got annotations %v scheduler %q priority %q", pod.Annotations, pod.Spec.SchedulerName, pod.Spec.PriorityClassName)
	}
}

// A job's topology becomes the PodGroup's network topology: hard for
// Required, soft for Preferred, up to the HyperNode tier named after the
// level (the name Volcano's label discovery gives a tier).
func TestTopologyIsThePodGroupsNetworkTopology(t *testing.T) {
	for mode, want := range map[musterv1.TopologyMode]string{musterv1.TopologyRequired: "hard", musterv1.TopologyPreferred: "soft"} {
		job := testutil.MakeJob("j", "ns").Role("worker", 4).Obj()
		job.Spec.Scheduling.Topology = musterv1.Topology{Level: "example.com/block", Mode: mode}
		pg := volcano.Backend{}.Objects(job, gang.For(job, musterv1.GangVolcano, 0))[0].(*unstructured.Unstructured)
		nt, _, _ := unstructured.NestedStringMap(pg.Object, "spec", "networkTopology")
		if nt["mode"] != want || nt["highestTierName"] != "example.com/block" {
			t.Errorf("%s: networkTopology = %v, want mode %s up to tier example.com/block", mode, nt, want)
		}
	}
	job := testutil.MakeJob("j", "ns").Role("worker", 4).Obj()
	pg := volcano.Backend{}.Objects(job, gang.For(job, musterv1.GangVolcano, 0))[0].(*unstructured.Unstructured)
	if _, ok, _ := unstructured.NestedMap(pg.Object, "spec", "networkTopology"); ok {
		t.Error("a job without a topology request has no network topology")
	}
}

// A role's own topology is a subgroup of the PodGroup: the role's pods,
// by the role label, placed within one HyperNode of the tier, its minimum
// together.
func TestRoleTopologyIsASubGroup(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("ps", 1).Role("worker", 0).Scalable(2, 8).ScalingReplicas(4).
		RoleTopology("example.com/rack", musterv1.TopologyPreferred).Obj()
	pg := volcano.Backend{}.Objects(job, gang.For(job, musterv1.GangVolcano, 0))[0].(*unstructured.Unstructured)
	groups, _, _ := unstructured.NestedSlice(pg.Object, "spec", "subGroupPolicy")
	if len(groups) != 1 {
		t.Fatalf("subGroupPolicy = %v, want one for worker", groups)
	}
	sg := groups[0].(map[string]any)
	sel, _, _ := unstructured.NestedStringMap(sg, "labelSelector", "matchLabels")
	nt, _, _ := unstructured.NestedStringMap(sg, "networkTopology")
	if sg["name"] != "worker" || sel[musterv1.LabelRole] != "worker" || sg["subGroupSize"] != int64(2) ||
		nt["mode"] != "soft" || nt["highestTierName"] != "example.com/rack" {
		t.Errorf("subgroup = %v", sg)
	}
	if keys, _, _ := unstructured.NestedStringSlice(sg, "matchLabelKeys"); len(keys) != 1 || keys[0] != musterv1.LabelRole {
		t.Errorf("matchLabelKeys = %v: without one Volcano makes no subgroup", keys)
	}
	if _, ok, _ := unstructured.NestedMap(pg.Object, "spec", "networkTopology"); ok {
		t.Error("a job-wide network topology without a job-wide request")
	}
}
