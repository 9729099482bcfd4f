package kueue_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/muster-dev/muster/internal/queue/kueue"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestDesiredHasOnePodSetPerRoleAtTheJobsSize(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u1").Role("ps", 2).Role("trainer", 0).Scalable(1, 8).ScalingReplicas(5).Role("idle", 0).Obj()
	job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	job.Spec.Scheduling.PriorityClassName = "high"
	wl, err := kueue.Desired(job, new(int32(100)))
	if err != nil {
		t.Fatal(err)
	}
	if got := kueue.Counts(wl); len(got) != 2 || got["ps"] != 2 || got["trainer"] != 5 {
		t.Errorf("podSets = %v, want ps 2, trainer 5, and no podSet for a role of 0", got)
	}
	spec := wl.Object["spec"].(map[string]any)
	ref, _ := spec["priorityClassRef"].(map[string]any)
	if spec["queueName"] != "team-a" || ref["name"] != "high" || ref["kind"] != "PriorityClass" || spec["priority"] != int64(100) {
		t.Errorf("spec = %v", spec)
	}
	noPriority, _ := kueue.Desired(job, nil)
	if _, ok := noPriority.Object["spec"].(map[string]any)["priorityClassRef"]; ok {
		t.Error("a priority class whose value is unknown is left out: Kueue wants both")
	}
	other := job.DeepCopy()
	other.UID = "u2"
	if kueue.WorkloadName(job) == kueue.WorkloadName(other) {
		t.Error("a job made again under the same name must not find the old one's Workload")
	}
	resized := job.DeepCopy()
	resized.Spec.Scaling.Replicas = new(int32(6))
	want, _ := kueue.Desired(resized, nil)
	if kueue.Matches(wl, want) {
		t.Error("a resized job's Workload no longer matches")
	}
}

// What a pod asks of the quota is part of what Kueue admitted: a template
// asking for more GPUs a pod no longer matches; the same quantity written
// otherwise still does.
func TestMatchesComparesWhatAPodAsks(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u1").Role("worker", 2).Obj()
	job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	withGPUs := func(n string) *unstructured.Unstructured {
		j := job.DeepCopy()
		q := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n), corev1.ResourceCPU: resource.MustParse("1")}
		j.Spec.Roles[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: q, Limits: q}
		wl, err := kueue.Desired(j, nil)
		if err != nil {
			t.Fatal(err)
		}
		return wl
	}
	admitted := withGPUs("1")
	if !kueue.Matches(admitted, withGPUs("1")) {
		t.Error("the same template no longer matches")
	}
	if kueue.Matches(admitted, withGPUs("8")) {
		t.Error("eight GPUs a pod still match a Workload admitted at one")
	}
	same := job.DeepCopy()
	q := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1000m")}
	same.Spec.Roles[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: q, Limits: q}
	if wl, _ := kueue.Desired(same, nil); !kueue.Matches(admitted, wl) {
		t.Error("1000m CPU is 1 CPU")
	}
}

// A job whose queue-name label was removed finishes its Workload, which
// hands its quota back.
func TestAJobThatLeftTheQueueFinishesItsWorkload(t *testing.T) {
	st := kueue.State{QuotaReserved: true, Admitted: true}
	if got := kueue.Decide(true, st, true, kueue.JobState{LeftQueue: true, Active: true}); got != kueue.StepFinish {
		t.Fatalf("step %v, want StepFinish", got)
	}
	if got := kueue.Decide(true, kueue.State{Finished: true}, true, kueue.JobState{LeftQueue: true}); got != kueue.StepNone {
		t.Fatalf("a finished Workload: step %v", got)
	}
}

func TestObserveAndPlacements(t *testing.T) {
	wl := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"admission": map[string]any{"clusterQueue": "cq", "podSetAssignments": []any{
			map[string]any{"name": "w", "flavors": map[string]any{"cpu": "a", "nvidia.com/gpu": "gpu", "memory": "a"}},
		}},
		"conditions": []any{
			map[string]any{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "Admitted", "status": "True", "reason": "Admitted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		},
	}}}
	st := kueue.Observe(wl)
	if !st.Admitted || !st.QuotaReserved || st.Evicted || st.ClusterQueue != "cq" {
		t.Fatalf("state = %+v", st)
	}
	if got := st.Flavors["w"]; len(got) != 2 || got[0] != "a" || got[1] != "gpu" {
		t.Errorf("flavors = %v, want [a gpu]", got)
	}
	flavor := func(labels map[string]any, tol map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"nodeLabels": labels}
		if tol != nil {
			spec["tolerations"] = []any{tol}
		}
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	placements, err := kueue.Placements(st, map[string]*unstructured.Unstructured{
		"a":   flavor(map[string]any{"pool": "a"}, nil),
		"gpu": flavor(map[string]any{"gpu": "h100"}, map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	kueue.Place(pod, placements["w"])
	if pod.Spec.NodeSelector["pool"] != "a" || pod.Spec.NodeSelector["gpu"] != "h100" || len(pod.Spec.Tolerations) != 1 {
		t.Errorf("pod spec = %+v", pod.Spec)
	}
	if _, err := kueue.Placements(st, nil); err == nil {
		t.Error("a flavor that does not exist must be an error")
	}
}

func TestDecideIsOneStepAtATime(t *testing.T) {
	admitted := kueue.State{QuotaReserved: true, Admitted: true}
	evicted := kueue.State{QuotaReserved: true, Admitted: true, Evicted: true, Reason: "Preempted"}
	cases := []struct {
		name    string
		exists  bool
		st      kueue.State
		matches bool
		job     kueue.JobState
		want    kueue.Step
	}{
		{"a new job gets its Workload", false, kueue.State{}, false, kueue.JobState{}, kueue.StepCreate},
		{"a finished job never gets one", false, kueue.State{}, false, kueue.JobState{Finished: true}, kueue.StepNone},
		{"a finished job finishes its Workload", true, admitted, true, kueue.JobState{Finished: true}, kueue.StepFinish},
		{"once", true, kueue.State{Finished: true}, true, kueue.JobState{Finished: true}, kueue.StepNone},
		{"a resized job's pods go first", true, admitted, false, kueue.JobState{Active: true}, kueue.StepNone},
		{"then its Workload is replaced", true, admitted, false, kueue.JobState{}, kueue.StepReplace},
		{"an evicted job's pods go first", true, evicted, true, kueue.JobState{Active: true}, kueue.StepNone},
		{"then its quota is handed back", true, evicted, true, kueue.JobState{}, kueue.StepRequeue},
		{"running pods are reported", true, admitted, true, kueue.JobState{Running: true, Active: true}, kueue.StepPodsReady},
		{"once", true, kueue.State{QuotaReserved: true, Admitted: true, PodsReady: true}, true, kueue.JobState{Running: true, Active: true}, kueue.StepNone},
		{"waiting in the queue", true, kueue.State{}, true, kueue.JobState{}, kueue.StepNone},
	}
	for _, c := range cases {
		if got := kueue.Decide(c.exists, c.st, c.matches, c.job); got != c.want {
			t.Errorf("%s: got step %d, want %d", c.name, got, c.want)
		}
	}
}

// A scalable role's podSet may be admitted down to its minReplicas; the
// admitted count is read back when Kueue admits fewer.
func TestPartialAdmission(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("ps", 1).Role("w", 4).Scalable(2, 6).Labels(kueue.LabelQueueName, "q").Obj()
	wl, err := kueue.Desired(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	mins := map[string]any{}
	for _, s := range sets {
		m := s.(map[string]any)
		mins[m["name"].(string)] = m["minCount"]
	}
	if mins["w"] != int64(2) || mins["ps"] != nil {
		t.Fatalf("minCount %v, want w 2 and none for ps", mins)
	}
	_ = unstructured.SetNestedSlice(wl.Object, []any{
		map[string]any{"name": "ps", "count": int64(1), "flavors": map[string]any{"cpu": "default"}},
		map[string]any{"name": "w", "count": int64(3), "flavors": map[string]any{"cpu": "default"}},
	}, "status", "admission", "podSetAssignments")
	if got := kueue.Observe(wl).Counts; len(got) != 1 || got["w"] != 3 {
		t.Errorf("admitted counts %v, want w 3 only", got)
	}
}
