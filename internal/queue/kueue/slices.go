package kueue

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Kueue's elastic jobs (its ElasticJobsViaWorkloadSlices feature): a job
// that opts in with AnnotationElasticJob is resized without being stopped.
// A scale-down lowers the counts of its admitted Workload in place, which
// hands the quota back; a scale-up asks for a new Workload, a slice
// annotated as the replacement for the admitted one, while the running
// pods keep running. Kueue admits the slice only if the quota has room for
// the job at its new size (counting the old slice's share as free), and
// then finishes the old slice (reason WorkloadSliceReplaced).
const (
	// AnnotationElasticJob, "true" on a TrainingJob with scalable roles,
	// resizes it under Kueue without stopping it. Muster copies it to the
	// job's Workloads, where Kueue reads it.
	AnnotationElasticJob = "kueue.x-k8s.io/elastic-job"
	// AnnotationReplacementFor on a new slice names the Workload it
	// replaces, as <namespace>/<name>.
	AnnotationReplacementFor = "kueue.x-k8s.io/workload-slice-replacement-for"
	// ReasonSliceReplaced is the reason of the Finished condition of a
	// slice its successor replaced.
	ReasonSliceReplaced = "WorkloadSliceReplaced"
)

// Elastic is whether the job is resized under Kueue without stopping: it
// asks to be, and it has roles to resize.
func Elastic(job *musterv1.TrainingJob) bool {
	return job.Annotations[AnnotationElasticJob] == "true" && len(job.Spec.Scaling.Roles) > 0
}

// SliceName names the slice that grows a job's Workload to the job's
// current generation: unique per spec change, the same on every retry.
func SliceName(job *musterv1.TrainingJob) string {
	return WorkloadName(job) + "-" + strconv.FormatInt(job.Generation, 10)
}

// Slice is the Workload that replaces current with the job at its
// current size.
func Slice(job *musterv1.TrainingJob, current *unstructured.Unstructured, priority *int32) (*unstructured.Unstructured, error) {
	wl, err := Desired(job, priority)
	if err != nil {
		return nil, err
	}
	wl.SetName(SliceName(job))
	ann := wl.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationReplacementFor] = current.GetNamespace() + "/" + current.GetName()
	wl.SetAnnotations(ann)
	return wl, nil
}

// Resized is whether have and want differ in their podSets' counts alone:
// the same queue, podSets and resources per pod.
func Resized(have, want *unstructured.Unstructured) bool {
	hq, _, _ := unstructured.NestedString(have.Object, "spec", "queueName")
	wq, _, _ := unstructured.NestedString(want.Object, "spec", "queueName")
	hc, wc := Counts(have), Counts(want)
	return hq == wq && slices.Equal(slices.Sorted(maps.Keys(hc)), slices.Sorted(maps.Keys(wc))) &&
		maps.EqualFunc(podResources(have), podResources(want), sameResources)
}

// grows is whether want asks for more of any podSet than have.
func grows(have, want map[string]int64) bool {
	for name, n := range want {
		if n > have[name] {
			return true
		}
	}
	return false
}

// SetCounts sets a Workload's podSets' counts, leaving everything else
// as the API server stored it (Kueue refuses any other change to an
// admitted Workload's podSets).
func SetCounts(wl *unstructured.Unstructured, counts map[string]int64) {
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	for _, s := range sets {
		m, _ := s.(map[string]any)
		name, _ := m["name"].(string)
		if n, ok := counts[name]; ok {
			m["count"] = n
		}
	}
	_ = unstructured.SetNestedSlice(wl.Object, sets, "spec", "podSets")
}

// Chain is a job's Workloads as one elastic job sees them: the current
// one, the slice that is to replace it, if any, and the one the current
// one replaced, if Kueue has finished that one for it.
type Chain struct {
	Current, Next, Replaced *unstructured.Unstructured
}

// SliceHandover is how long a job runs on the admission of the Workload its
// new slice replaced while Kueue has not yet admitted the slice: Kueue's
// scheduler finishes the old slice first and admits the new one a moment
// later, and in between the job must not be stopped. A slice still not
// admitted after that is waited for like any Workload.
const SliceHandover = 30 * time.Second

// FindChain picks the current Workload and its pending successor from a
// job's Workloads. Slices their successors replaced are history; the
// oldest of the rest is current, and the one that names it as the Workload
// it replaces is next. A job that never grew has one Workload, current
// whatever its state.
func FindChain(workloads []*unstructured.Unstructured) Chain {
	live := slices.DeleteFunc(slices.Clone(workloads), replaced)
	slices.SortStableFunc(live, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time),
			// Created within one second: a slice comes after what it replaces.
			boolOrder(a.GetAnnotations()[AnnotationReplacementFor] != "", b.GetAnnotations()[AnnotationReplacementFor] != ""))
	})
	var c Chain
	if len(live) == 0 {
		return c
	}
	c.Current = live[0]
	key := c.Current.GetNamespace() + "/" + c.Current.GetName()
	for _, wl := range live[1:] {
		if wl.GetAnnotations()[AnnotationReplacementFor] == key {
			c.Next = wl
			break
		}
	}
	if prev := c.Current.GetAnnotations()[AnnotationReplacementFor]; prev != "" {
		for _, wl := range workloads {
			if replaced(wl) && wl.GetNamespace()+"/"+wl.GetName() == prev {
				c.Replaced = wl
			}
		}
	}
	return c
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// replaced is whether a successor replaced the Workload.
func replaced(wl *unstructured.Unstructured) bool {
	c := apimeta.FindStatusCondition(conditions(wl), CondFinished)
	return c != nil && c.Status == "True" && c.Reason == ReasonSliceReplaced
}

// DecideResize is the step that resizes an elastic job's Workload without
// stopping the job, StepNone when there is none to take (Decide then
// decides as for any job). have are the current Workload's counts, want the
// job's, next the pending slice's state and counts.
func DecideResize(current State, have, want map[string]int64, next *State, nextCounts map[string]int64, job JobState) Step {
	switch {
	case job.Finished || job.LeftQueue || current.Finished || current.Evicted:
		return StepNone
	case next != nil && next.QuotaReserved:
		// Kueue admitted the slice; it finishes the old one itself, unless
		// something kept it from doing so.
		return StepFinishReplaced
	case next != nil && !grows(have, want):
		// The job shrank back within what it holds.
		return StepDropSlice
	case next != nil && !maps.Equal(nextCounts, want):
		return StepResizeSlice
	case next != nil || maps.Equal(have, want):
		return StepNone
	case !current.QuotaReserved || !grows(have, want):
		// Before admission any count may change; after it, only down.
		return StepResize
	}
	return StepSlice
}
