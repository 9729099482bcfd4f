package plan

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// Status records every task, yet stays small at any job size: what the pods
// themselves show is left out, and tasks alike share one entry.
//
//   - A task's pod name is <job>-<role>-<index>, so it is not written.
//   - A task's pod is the one its name finds; no UID is written. A task
//     being restarted keeps its ended instance's number (attempts) until
//     the replacement runs or ends, so the instances up to that number
//     are the ended ones, to delete and never take for the replacement
//     (isEnded), and the replacement is the next.
//   - The last exit is kept for the most recent exits of each role; it is
//     what people read, and the planner needs no other (a completion rule
//     triggers on the exit that has just happened).
//   - Consecutive tasks left with equal entries share one, with a count.
//
// So the bytes an entry takes are bounded (no UID, message or reason but
// in the few recent exits), and at most MaxTasks entries: see
// TestStatusStaysUnderEtcdsLimit for the worst case.
//
// Expanding is the exact inverse for everything the planner reads, given
// the same pods; the simulation test plans with and without the summary and
// checks that every decision is the same.

// recentExits is how many last exits of each role status keeps.
const recentExits = 8

// recentWaiting is how many tasks of each role status says, at most, why
// their pods wait (TaskStatus.waiting): the first, by index.
const recentWaiting = 8

// vanishedUID marks a pending or running task whose pod is gone: it ended
// unseen (deleted by someone else, or lost with its node).
const vanishedUID types.UID = "vanished"

// summarizeStatus is off only in the test that checks it changes no
// decision.
var summarizeStatus = true

// expandTasks turns each role's entries into one task per index, in index
// order, with their pod names.
func expandTasks(job *musterv1.TrainingJob, status *musterv1.TrainingJobStatus) {
	for i := range status.Roles {
		rs := &status.Roles[i]
		tasks := make([]musterv1.TaskStatus, 0, rs.TaskCount())
		for _, e := range rs.Tasks {
			for k := range max(e.Count, 1) {
				// Nothing a task points to is changed in place by a plan,
				// so the entry's copies may share it.
				t := e
				t.Index, t.Count = e.Index+k, 0
				t.Pod = objects.PodName(job.Name, rs.Name, t.Index)
				tasks = append(tasks, t)
			}
		}
		slices.SortFunc(tasks, func(a, b musterv1.TaskStatus) int { return cmp.Compare(a.Index, b.Index) })
		rs.Tasks = tasks
	}
}

// attachPods gives each pending or running task its pod's UID and instance
// number, or marks it vanished when the pod is gone.
func attachPods(st *musterv1.TrainingJobStatus, pods observe.Pods) {
	for i := range st.Roles {
		for j := range st.Roles[i].Tasks {
			t := &st.Roles[i].Tasks[j]
			if (t.State != musterv1.TaskPending && t.State != musterv1.TaskRunning) || t.PodUID != "" {
				continue
			}
			if pod := pods.Tasks[t.Pod]; pod != nil {
				t.PodUID = pod.UID
				t.Attempts = max(t.Attempts, observe.TaskAttempt(pod))
			} else {
				t.PodUID = vanishedUID
			}
		}
	}
}

// summarizeTasks writes each role's tasks in the short form.
func summarizeTasks(status *musterv1.TrainingJobStatus) {
	if !summarizeStatus {
		return
	}
	for i := range status.Roles {
		rs := &status.Roles[i]
		keep := keptExits(rs.Tasks)
		out := make([]musterv1.TaskStatus, 0, 4)
		waiting := 0
		for _, t := range rs.Tasks {
			e := shortEntry(t, keep[t.Index])
			if e.Waiting != "" {
				// The first few tell why pods wait: many pods of a role wait
				// for one reason, and tasks alike share an entry only when
				// they say the same.
				if waiting++; waiting > recentWaiting {
					e.Waiting = ""
				}
			}
			if n := len(out); n > 0 && alike(out[n-1], e) && out[n-1].Index+max(out[n-1].Count, 1) == e.Index {
				out[n-1].Count = max(out[n-1].Count, 1) + 1
				continue
			}
			out = append(out, e)
		}
		rs.Tasks = out
	}
}

// shortEntry is one task as status writes it.
func shortEntry(t musterv1.TaskStatus, keepExit bool) musterv1.TaskStatus {
	// Only fields are cleared, nothing they point to changes: a copy of
	// the entry is enough.
	e := t
	e.Pod, e.PodUID = "", ""
	if !keepExit {
		e.LastExit = nil
	}
	return e
}

// keptExits are the tasks whose last exits status keeps: the most recent
// of the role.
func keptExits(tasks []musterv1.TaskStatus) map[int32]bool {
	var exited []musterv1.TaskStatus
	for _, t := range tasks {
		if t.LastExit != nil {
			exited = append(exited, t)
		}
	}
	slices.SortStableFunc(exited, func(a, b musterv1.TaskStatus) int {
		return endedAt(b).Compare(endedAt(a).Time) // newest first
	})
	keep := make(map[int32]bool, recentExits)
	for _, t := range exited[:min(len(exited), recentExits)] {
		keep[t.Index] = true
	}
	return keep
}

// alike is whether two short entries differ only in where they are.
func alike(a, b musterv1.TaskStatus) bool {
	a.Index, b.Index, a.Count, b.Count, a.Pod, b.Pod = 0, 0, 0, 0, "", ""
	return equality.Semantic.DeepEqual(a, b)
}
