package kueue_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/muster-dev/muster/internal/queue/kueue"
	"github.com/muster-dev/muster/internal/testutil"
)

// An elastic job is resized without stopping: down in place, up through a
// slice that Kueue admits in the old one's stead; one step at a time.
func TestDecideResizeIsOneStepAtATime(t *testing.T) {
	admitted := kueue.State{QuotaReserved: true, Admitted: true}
	two, three, four := map[string]int64{"w": 2}, map[string]int64{"w": 3}, map[string]int64{"w": 4}
	cases := []struct {
		name       string
		current    kueue.State
		have, want map[string]int64
		next       *kueue.State
		nextCounts map[string]int64
		job        kueue.JobState
		step       kueue.Step
	}{
		{"the same size", admitted, two, two, nil, nil, kueue.JobState{}, kueue.StepNone},
		{"a scale-up asks for a slice", admitted, two, four, nil, nil, kueue.JobState{}, kueue.StepSlice},
		{"which waits for Kueue", admitted, two, four, &kueue.State{}, four, kueue.JobState{}, kueue.StepNone},
		{"grows with the job", admitted, two, three, &kueue.State{}, four, kueue.JobState{}, kueue.StepResizeSlice},
		{"and goes when the job shrinks back", admitted, two, two, &kueue.State{}, four, kueue.JobState{}, kueue.StepDropSlice},
		{"an admitted slice replaces the old", admitted, two, four, &admitted, four, kueue.JobState{}, kueue.StepFinishReplaced},
		{"a scale-down resizes in place", admitted, four, three, nil, nil, kueue.JobState{}, kueue.StepResize},
		{"any resize before admission does", kueue.State{}, two, four, nil, nil, kueue.JobState{}, kueue.StepResize},
		{"not while evicted", kueue.State{QuotaReserved: true, Evicted: true}, four, three, nil, nil, kueue.JobState{}, kueue.StepNone},
		{"not once finished", admitted, two, four, nil, nil, kueue.JobState{Finished: true}, kueue.StepNone},
		{"not once out of the queue", admitted, two, four, nil, nil, kueue.JobState{LeftQueue: true}, kueue.StepNone},
	}
	for _, c := range cases {
		if got := kueue.DecideResize(c.current, c.have, c.want, c.next, c.nextCounts, c.job); got != c.step {
			t.Errorf("%s: got step %d, want %d", c.name, got, c.step)
		}
	}
}

// The chain is what remains once replaced slices are set aside: the oldest
// is current, and its successor the one naming it.
func TestFindChain(t *testing.T) {
	at := func(name string, sec int, replaces string, replaced bool) *unstructured.Unstructured {
		wl := &unstructured.Unstructured{Object: map[string]any{}}
		wl.SetGroupVersionKind(kueue.WorkloadKind)
		wl.SetNamespace("ns")
		wl.SetName(name)
		wl.SetCreationTimestamp(metav1.NewTime(time.Unix(int64(1000+sec), 0)))
		if replaces != "" {
			wl.SetAnnotations(map[string]string{kueue.AnnotationReplacementFor: "ns/" + replaces})
		}
		if replaced {
			wl.Object["status"] = map[string]any{"conditions": []any{
				kueue.Condition(kueue.CondFinished, true, kueue.ReasonSliceReplaced, "", metav1.Now()),
			}}
		}
		return wl
	}
	name := func(wl *unstructured.Unstructured) string {
		if wl == nil {
			return ""
		}
		return wl.GetName()
	}
	cases := []struct {
		name                    string
		in                      []*unstructured.Unstructured
		current, next, replaced string
	}{
		{"none", nil, "", "", ""},
		{"one", []*unstructured.Unstructured{at("a", 0, "", false)}, "a", "", ""},
		{"growing, made in the same second", []*unstructured.Unstructured{at("b", 0, "a", false), at("a", 0, "", false)}, "a", "b", ""},
		{"grown", []*unstructured.Unstructured{at("a", 0, "", true), at("b", 5, "a", false)}, "b", "", "a"},
		{"growing again", []*unstructured.Unstructured{at("c", 9, "b", false), at("a", 0, "", true), at("b", 5, "a", false)}, "b", "c", "a"},
		{"a slice of another", []*unstructured.Unstructured{at("a", 0, "", false), at("x", 5, "gone", false)}, "a", "", ""},
	}
	for _, c := range cases {
		got := kueue.FindChain(c.in)
		if name(got.Current) != c.current || name(got.Next) != c.next || name(got.Replaced) != c.replaced {
			t.Errorf("%s: current %q next %q replaced %q, want %q %q %q", c.name, name(got.Current), name(got.Next), name(got.Replaced),
				c.current, c.next, c.replaced)
		}
	}
}

// An elastic job's Workload says so to Kueue and asks to be admitted
// whole; its slice names the Workload it replaces and the job's
// generation; a Workload of the same podSets and resources but other
// counts is only resized.
func TestElasticWorkloadsAndSlices(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).Scalable(2, 4).Labels(kueue.LabelQueueName, "q").Obj()
	plain, _ := kueue.Desired(job, nil)
	if kueue.Elastic(job) || plain.GetAnnotations()[kueue.AnnotationElasticJob] != "" {
		t.Fatal("a job that does not ask for it is not elastic under Kueue")
	}
	job.Annotations = map[string]string{kueue.AnnotationElasticJob: "true"}
	job.Generation = 7
	wl, err := kueue.Desired(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	if _, ok := sets[0].(map[string]any)["minCount"]; ok || wl.GetAnnotations()[kueue.AnnotationElasticJob] != "true" {
		t.Errorf("an elastic job's Workload: annotations %v, podSets %v; want the annotation and no minCount", wl.GetAnnotations(), sets)
	}
	wl.SetName(kueue.WorkloadName(job))
	grown := job.DeepCopy()
	grown.Spec.Scaling.Replicas = new(int32(4))
	slice, err := kueue.Slice(grown, wl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slice.GetName() != kueue.WorkloadName(job)+"-7" || slice.GetAnnotations()[kueue.AnnotationReplacementFor] != "ns/"+kueue.WorkloadName(job) ||
		kueue.Counts(slice)["w"] != 4 {
		t.Errorf("slice %s annotations %v counts %v", slice.GetName(), slice.GetAnnotations(), kueue.Counts(slice))
	}
	if kueue.Matches(wl, slice) || !kueue.Resized(wl, slice) {
		t.Error("a Workload that differs in counts alone is resized, not replaced")
	}
	other := grown.DeepCopy()
	other.Labels[kueue.LabelQueueName] = "elsewhere"
	if moved, _ := kueue.Desired(other, nil); kueue.Resized(wl, moved) {
		t.Error("a job in another queue is queued anew")
	}
	kueue.SetCounts(wl, map[string]int64{"w": 3})
	if kueue.Counts(wl)["w"] != 3 {
		t.Errorf("SetCounts: %v", kueue.Counts(wl))
	}
}
