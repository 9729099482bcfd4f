package plan

import (
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
)

// Rescaling follows FrameworkController's strong safety guarantees:
//
//   - A scale-up's tasks are in status (state Creating) before their pods
//     exist, and count for completion at once.
//   - A scale-down's tasks are marked deletionPending, with completion code
//     -230, and that is written before their pods are deleted. From then on
//     they never count for completion and are never restarted or reused.
//   - A deletion-pending task leaves status only when its pod is gone and
//     every task after it has left: only a contiguous tail is compacted.
//   - A scale-up over an index whose task is still deletion-pending waits
//     for that pod to go, then makes a new instance (new counters).
//
// Because every decision is written before any pod is touched, a rescale
// and a completion-policy change in one update act as if the rescale were
// already done (SG1), and overlapping rescales either took effect (the
// user could see it in status) or left no trace (SG2).

// DeleteReasonScaleDown is the reason of a pod deletion a scale-down
// decided: the executor keeps the runtime's peer lists in step with it.
const DeleteReasonScaleDown = "scale down"

// scaleDown marks a task deletion-pending and deletes its pod (nil: gone).
func scaleDown(c *planContext, role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod, out *Result) {
	if !ts.DeletionPending {
		ts.DeletionPending = true
		ts.LastExit = new(failure.ScaledDownExit(ts.PodUID, role.Name, c.now.Time))
		if pod != nil {
			out.event(false, musterv1.EventReasonScalingDown, "deleting "+ts.Pod+": role "+role.Name+" scaled down")
		}
	}
	switch {
	case pod == nil:
		ts.State = musterv1.TaskStopped
	case pod.DeletionTimestamp != nil:
		out.forceIfOverdue(pod, role, c.now.Time)
	default:
		out.deletePod(pod, DeleteReasonScaleDown)
	}
}

// compact drops the deletion-pending tasks at the tail whose pods are gone.
func compact(tasks []musterv1.TaskStatus, replicas int32, pods map[string]*corev1.Pod) []musterv1.TaskStatus {
	for n := len(tasks); n > int(replicas); n-- {
		last := tasks[n-1]
		if !last.DeletionPending || pods[last.Pod] != nil {
			return tasks[:n]
		}
		tasks = tasks[:n-1]
	}
	return tasks
}

// counted is whether a task counts for completion and the job's counts.
func counted(t musterv1.TaskStatus) bool { return !t.DeletionPending }
