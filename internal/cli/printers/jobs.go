// Package printers renders TrainingJobs and their events for people: the
// tables of get and events, and describe. Programs use -o json or yaml.
package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Wide columns have priority 1: the table printer shows them with -o wide.
var jobColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Phase", Type: "string"},
	{Name: "Ready", Type: "string", Description: "running tasks / desired tasks"},
	{Name: "Restarts", Type: "integer"},
	{Name: "Progress", Type: "string", Description: "how much of training is done, as the job's program reports it (spec.progress)"},
	{Name: "ETA", Type: "string", Description: "when training will be done at its recent pace"},
	{Name: "Age", Type: "string"},
	{Name: "Attempt", Type: "integer", Priority: 1},
	{Name: "Backend", Type: "string", Priority: 1, Description: "the gang backend in force"},
	{Name: "Gang", Type: "string", Priority: 1, Description: "the GangScheduled condition: Scheduled, or why not"},
}

// JobTable renders a TrainingJob or a TrainingJobList as a table.
func JobTable(obj runtime.Object, now time.Time) (*metav1.Table, error) {
	var jobs []musterv1.TrainingJob
	switch o := obj.(type) {
	case *musterv1.TrainingJob:
		jobs = []musterv1.TrainingJob{*o}
	case *musterv1.TrainingJobList:
		jobs = o.Items
	default:
		return nil, fmt.Errorf("no table for %T", obj)
	}
	t := &metav1.Table{ColumnDefinitions: jobColumns}
	for i := range jobs {
		j := &jobs[i]
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{
				j.Name, orDash(string(j.Status.Phase)), orDash(j.Status.Ready), int64(j.Status.Restarts.Total),
				Progress(j.Status.Progress), ETA(j.Status.Progress, now), Age(j.CreationTimestamp, now), int64(j.Status.Attempt), backend(j), gang(j),
			},
			Object: runtime.RawExtension{Object: j},
		})
	}
	return t, nil
}

// Progress is how far a job's training is: its percent, or its step or
// epoch when it reports no total, or "-".
func Progress(p *musterv1.ProgressStatus) string {
	switch {
	case p == nil:
		return "-"
	case p.Percent != nil:
		return strconv.Itoa(int(*p.Percent)) + "%"
	case p.Step != nil:
		return "step " + strconv.FormatInt(*p.Step, 10)
	case p.Epoch != nil:
		return "epoch " + strconv.FormatInt(*p.Epoch, 10)
	}
	return "-"
}

// ETA is how long until a job's training is done at its recent pace, or
// "-" when nothing says (no pace yet, or done).
func ETA(p *musterv1.ProgressStatus, now time.Time) string {
	if p == nil || p.EstimatedCompletionTime == nil || !p.EstimatedCompletionTime.After(now) {
		return "-"
	}
	return duration.HumanDuration(p.EstimatedCompletionTime.Sub(now))
}

// backend is the gang backend in force, or the one asked for before the
// operator has recorded it.
func backend(j *musterv1.TrainingJob) string {
	if j.Status.Scheduling != nil && j.Status.Scheduling.Backend != "" {
		return string(j.Status.Scheduling.Backend)
	}
	return orDash(string(j.Spec.Scheduling.Backend))
}

func gang(j *musterv1.TrainingJob) string {
	c := j.Status.Condition(musterv1.ConditionGangScheduled)
	switch {
	case c == nil:
		return "-"
	case c.Status == metav1.ConditionTrue:
		return "Scheduled"
	}
	return orDash(c.Reason)
}

var eventColumns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string"},
	{Name: "Type", Type: "string"},
	{Name: "Reason", Type: "string"},
	{Name: "Object", Type: "string"},
	{Name: "Message", Type: "string"},
	{Name: "Count", Type: "integer", Priority: 1},
	{Name: "First Seen", Type: "string", Priority: 1},
}

// EventTable renders an EventList, oldest first as the caller sorted it.
func EventTable(obj runtime.Object, now time.Time) (*metav1.Table, error) {
	var events []corev1.Event
	switch o := obj.(type) {
	case *corev1.Event:
		events = []corev1.Event{*o}
	case *corev1.EventList:
		events = o.Items
	default:
		return nil, fmt.Errorf("no table for %T", obj)
	}
	t := &metav1.Table{ColumnDefinitions: eventColumns}
	for i := range events {
		e := &events[i]
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{
				Age(metav1.NewTime(EventTime(e)), now), e.Type, e.Reason,
				lowerKind(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, e.Message,
				int64(max(e.Count, 1)), Age(e.FirstTimestamp, now),
			},
			Object: runtime.RawExtension{Object: e},
		})
	}
	return t, nil
}

// EventTime is when the event last happened, from whichever field its
// recorder filled in.
func EventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

func lowerKind(k string) string {
	b := []byte(k)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Age is kubectl's age of t: 90s, 5m, 3h, 2d.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
