package printers

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

var topColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Phase", Type: "string"},
	{Name: "World", Type: "string", Description: "the scalable roles' size, and its bounds; else every role's tasks"},
	{Name: "Ready", Type: "string", Description: "running tasks / desired tasks"},
	{Name: "Progress", Type: "string", Description: "how much of training is done, as the job's program reports it (status.progress)"},
	{Name: "Throughput", Type: "string", Description: "the newest throughput read, samples/s: the autoscaler's (status.autoscaler.lastSample), else the program's report (status.progress.samplesPerSecond)"},
	{Name: "Sampled", Type: "string", Description: "how long ago it was read"},
	{Name: "Best", Type: "string", Description: "the best size so far and its median throughput"},
	{Name: "Autoscaler", Type: "string", Description: "the autoscaler's phase/reason"},
	{Name: "Restarts", Type: "integer"},
}

// TopTable renders the training progress of a TrainingJob or a
// TrainingJobList: world size, throughput, the autoscaler's state.
func TopTable(obj runtime.Object, now time.Time) (*metav1.Table, error) {
	var jobs []musterv1.TrainingJob
	switch o := obj.(type) {
	case *musterv1.TrainingJob:
		jobs = []musterv1.TrainingJob{*o}
	case *musterv1.TrainingJobList:
		jobs = o.Items
	default:
		return nil, fmt.Errorf("no table for %T", obj)
	}
	t := &metav1.Table{ColumnDefinitions: topColumns}
	for i := range jobs {
		j := &jobs[i]
		throughput, sampled, best, autoscaler := "-", "-", "-", "-"
		if a := j.Status.Autoscaler; a != nil {
			if a.LastSample != "" {
				throughput = a.LastSample + "/s"
				if a.LastSampleAt != nil {
					sampled = Age(*a.LastSampleAt, now)
				}
			}
			best = bestSize(a)
			autoscaler = orDash(a.Phase)
			if a.Reason != "" {
				autoscaler += "/" + a.Reason
			}
		}
		// Without the autoscaler's samples, the program's own report.
		if p := j.Status.Progress; throughput == "-" && p != nil && p.SamplesPerSecond != "" {
			throughput = p.SamplesPerSecond + "/s"
			if p.LastProgressTime != nil {
				sampled = Age(*p.LastProgressTime, now)
			}
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{
				j.Name, orDash(string(j.Status.Phase)), World(j), orDash(j.Status.Ready), Progress(j.Status.Progress),
				throughput, sampled, best, autoscaler, int64(j.Status.Restarts.Total),
			},
			Object: runtime.RawExtension{Object: j},
		})
	}
	return t, nil
}

// World is a job's size: the scalable roles' tasks and their bounds
// ("3 (2-4)") when it has scalable roles, else every role's tasks.
func World(j *musterv1.TrainingJob) string {
	if len(j.Spec.Scaling.Roles) > 0 {
		var lo, hi int32
		for _, r := range j.Spec.Scaling.Roles {
			lo += ptr.Deref(r.MinReplicas, 1)
			hi += r.MaxReplicas
		}
		size := j.Status.Replicas
		if size == 0 {
			size = ptr.Deref(j.Spec.Scaling.Replicas, 0)
		}
		return fmt.Sprintf("%d (%d-%d)", size, lo, hi)
	}
	var n int32
	for _, r := range j.Status.Roles {
		n += r.Replicas
	}
	if n == 0 {
		for _, r := range j.Spec.Roles {
			n += ptr.Deref(r.Replicas, 1)
		}
	}
	return itoa(n)
}

// bestSize is the autoscaler's best size so far with its throughput:
// "3 @ 462/s".
func bestSize(a *musterv1.AutoscalerStatus) string {
	if a.LastGood == 0 {
		return "-"
	}
	for _, s := range a.Sizes {
		if s.Replicas == a.LastGood && s.Throughput != "" {
			return fmt.Sprintf("%d @ %s/s", s.Replicas, s.Throughput)
		}
	}
	return itoa(a.LastGood)
}
