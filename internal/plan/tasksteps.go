package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// A task's step is what its observed pod asks of the plan: the first half
// of syncing a task, made before anything is decided. Only an ended pod
// asks for a decision (failure.Decide); the other steps move the task along its
// state machine (see docs/state-machine.md) by what the pod shows.
type stepKind int

const (
	stepNone              stepKind = iota // a final task, or one held back by dependsOn
	stepCreate                            // no pod: make one
	stepTerminating                       // its pod is being deleted: wait, or force it once overdue
	stepRemoveEnded                       // the ended instance a restart was decided for: delete it
	stepRunning                           // its pod runs
	stepPending                           // its pod has not started
	stepEnded                             // its pod ended or vanished: decide what follows
	stepEndLater                          // its pod ended, but this plan has recorded enough ends
	stepScaleDown                         // a scale-down removes it
	stepRestartingInPlace                 // its pod restarts in place into the task's next instance
	stepStopRerun                         // it failed for good, and its pod, which restarts in place, runs it again: stop it
	stepInPlaceUnreadable                 // its pod restarts in place, but what it was asked cannot be read: re-create it
	stepInPlaceOverdue                    // its pod was asked to restart in place and has not begun in time: re-create it
)

// taskStep is one task with its pod and what the pod asks. For an ended
// pod it carries the end as classified and the decision on it.
type taskStep struct {
	kind     stepKind
	task     musterv1.TaskStatus
	pod      *corev1.Pod
	end      failure.End
	decision failure.Decision
	// failedInPlace: the end is a training container's failure that its
	// restart rule restarted alone (observe.InPlaceFailure).
	failedInPlace bool
	// left is, for stepRestartingInPlace, how long the restart may still
	// take to begin (inPlaceRestartDeadline).
	left time.Duration
}

// maxEndsPerPlan bounds the pod ends one plan records. A task being
// restarted keeps its ended pod's UID and exit in status until that pod is
// gone; recording at most this many at a time keeps status small when a
// whole job's pods end at once. The rest keep their state and are recorded
// by the next plan, at once.
const maxEndsPerPlan = 500

// observeRole is each task of role with its step, in index order: the
// tasks in status, and new ones up to replicas. old is the role's status
// as last written; waitFor is an unmet dependency, or "". endsLeft is how
// many more ends the plan may record; it returns how many are left.
func observeRole(c *planContext, role *musterv1.Role, old *musterv1.RoleStatus, waitFor string, endsLeft int) ([]taskStep, int) {
	replicas := topology.Replicas(role)
	size := replicas
	if old != nil {
		size = max(size, int32(len(old.Tasks)))
	}
	steps := make([]taskStep, 0, size)
	for i := int32(0); i < size; i++ {
		ts := taskStatus(old, i)
		ts.Pod = objects.PodName(c.job.Name, role.Name, i)
		pod := c.pods.Tasks[ts.Pod]
		var s taskStep
		switch {
		case i >= replicas || (ts.DeletionPending && pod != nil):
			// Scaled down, or scaled down and back up before the old
			// instance was gone: it goes before its index is reused.
			s = taskStep{kind: stepScaleDown, task: ts, pod: pod}
		case ts.DeletionPending:
			// Its pod is gone: a new instance takes the index.
			s = observeTask(c, role, musterv1.TaskStatus{Index: i, Pod: ts.Pod, State: musterv1.TaskCreating})
		case waitFor != "" && ts.Attempts == 0 && pod == nil:
			// Held back until its dependencies are met; a task that has
			// already run is replaced as usual.
			ts.State = musterv1.TaskCreating
			s = taskStep{kind: stepNone, task: ts}
		default:
			s = observeTask(c, role, ts)
		}
		if s.kind == stepEnded {
			if endsLeft == 0 {
				s.kind = stepEndLater
				if s.pod != nil {
					c.endsLater[s.pod.UID] = true
				}
			} else {
				endsLeft--
				s.end, s.failedInPlace = classifyEnd(c, s.task, s.pod)
				s.decision = failure.Decide(c.policy, failure.RoleOf(role), s.end)
			}
		}
		steps = append(steps, s)
	}
	return steps, endsLeft
}

// observeTask is a task's step by its pod.
func observeTask(c *planContext, role *musterv1.Role, ts musterv1.TaskStatus) taskStep {
	ts.Pod = objects.PodName(c.job.Name, role.Name, ts.Index)
	pod := c.pods.Tasks[ts.Pod]
	final := ts.State == musterv1.TaskSucceeded || ts.State == musterv1.TaskFailed
	if pod != nil && pod.UID != ts.PodUID && !isEnded(&ts, pod) && !final {
		// A pod made for this task that status does not know yet. A
		// restarting task keeps its ended instance's number until the
		// replacement runs or ends (isEnded).
		ts.PodUID = pod.UID
		if ts.State != musterv1.TaskRestarting {
			ts.Attempts = max(ts.Attempts, observe.TaskAttempt(pod))
		}
	}
	s := taskStep{task: ts, pod: pod}
	switch {
	case final && pod != nil && ts.State == musterv1.TaskFailed && rerunsInPlace(pod):
		s.kind = stepStopRerun
	case final:
		s.kind = stepNone
	case pod == nil:
		s.kind = missingPod(&s.task)
	case observe.DeletedByDisruption(pod) != nil && !isEnded(&ts, pod):
		// Being deleted by a scheduler's preemption, an eviction, a tainted
		// node, which said why in a DisruptionTarget condition: that ends
		// the task now, decided while the pod still shows the reason, not
		// once it is gone and only its absence is left to classify.
		s.kind = stepEnded
	case pod.DeletionTimestamp != nil && !observe.EndedBeforeDeletion(pod):
		// Being deleted, by us or someone else: wait until it is gone, or
		// force it once the role's graceful deletion timeout has passed.
		// A pod that had ended before its deletion was asked is taken for
		// how it ended, below: the tracking finalizer kept it for that.
		s.kind = stepTerminating
	case isEnded(&ts, pod):
		// The ended instance a restart was decided for: remove it, then
		// make its replacement once it is gone; or restart it in place.
		s.kind = stepRemoveEnded
	default:
		s.kind = liveStep(pod)
		if s.kind == stepRestartingInPlace {
			if s.left = restartLeft(c, &ts); s.left <= 0 {
				s.kind = stepInPlaceOverdue
			}
		}
	}
	return s
}

// inPlaceRestartDeadline bounds how long a restart in place may take from
// the decision that asked it to the pod's node starting it: the node stops
// every container first, within its grace period, then starts the
// watcher. One not begun by then was lost on the way (the watcher never
// saw the ask, the annotation was raised by someone else): the pod is
// re-created instead.
const inPlaceRestartDeadline = 5 * time.Minute

// restartLeft is how long the restart in place a task's pod shows asked
// may still take to begin: inPlaceRestartDeadline from the last decision
// about the task, its last exit (a task's or a role's restart records
// one) or the start of the attempt (a job's restart starts one). A task
// with neither waits the whole deadline.
func restartLeft(c *planContext, ts *musterv1.TaskStatus) time.Duration {
	since := attemptStart(&c.job.Status)
	if ts.LastExit != nil && ts.LastExit.FinishedAt != nil && (since == nil || ts.LastExit.FinishedAt.After(since.Time)) {
		since = ts.LastExit.FinishedAt
	}
	if since == nil {
		return inPlaceRestartDeadline
	}
	return since.Add(inPlaceRestartDeadline).Sub(c.now.Time)
}

// liveStep is the step of a task whose pod is its current instance and
// is not being deleted.
func liveStep(pod *corev1.Pod) stepKind {
	switch {
	case observe.InPlaceUnreadable(pod):
		return stepInPlaceUnreadable
	case observe.InPlaceOf(pod) == observe.RunRestarting:
		// Asked to restart in place, and not done: what its containers
		// show is the instance before.
		return stepRestartingInPlace
	case observe.InPlaceFailure(pod) != nil:
		// A training container failed and was restarted alone: the
		// instance ended, though the pod runs on.
		return stepEnded
	case pod.Status.Phase == corev1.PodRunning:
		return stepRunning
	case observe.Ended(pod):
		return stepEnded
	default:
		return stepPending
	}
}

// missingPod is the step of a task with no pod: a pending or running task
// whose pod was known has ended unseen; any other is made a pod.
func missingPod(ts *musterv1.TaskStatus) stepKind {
	switch ts.State {
	case musterv1.TaskPending, musterv1.TaskRunning:
		if ts.PodUID != "" {
			return stepEnded
		}
	case musterv1.TaskRestarting:
	default:
		ts.State = musterv1.TaskCreating
	}
	return stepCreate
}

// classifyEnd is how a task's pod (nil: vanished) ended, classified, and
// whether the end is a training container's failure its restart rule
// restarted alone. A pod deleted with a DisruptionTarget condition ended
// by that disruption.
func classifyEnd(c *planContext, ts musterv1.TaskStatus, pod *corev1.Pod) (end failure.End, inPlace bool) {
	var exit musterv1.ExitStatus
	disrupted := pod != nil && observe.DeletedByDisruption(pod) != nil
	switch {
	case pod == nil:
		exit = failure.VanishedExit(c.now.Time, c.classifier)
	case disrupted:
		exit = failure.DisruptedExit(observe.DeletedByDisruption(pod), c.now.Time, c.classifier)
	default:
		if failed := observe.InPlaceFailure(pod); failed != nil {
			pod, inPlace = failed, true
		}
		exit = failure.ExitOf(pod, c.classifier)
	}
	exit.PodUID = ts.PodUID
	succeeded := pod != nil && !disrupted && pod.Status.Phase == corev1.PodSucceeded
	return failure.End{Pod: ts.Pod, Exit: exit, Succeeded: succeeded, Vanished: pod == nil}, inPlace
}

// isEnded is whether pod is an instance of the task that has ended for
// the plans: the one its last exit names, or, for a task being restarted,
// any instance up to the one that ended (status keeps that one's number in
// attempts until the replacement runs or ends). Telling the ended instance
// by its number rather than by its UID keeps status small however many
// restarting tasks still have their ended pods (on lost nodes, say): tasks
// alike share an entry.
func isEnded(ts *musterv1.TaskStatus, pod *corev1.Pod) bool {
	named := ts.LastExit != nil && ts.LastExit.PodUID != "" && ts.LastExit.PodUID != vanishedUID
	n, labelled := observe.TaskAttemptOf(pod)
	if named && ts.LastExit.PodUID == pod.UID {
		if observe.InPlaceOf(pod) == observe.NotInPlace {
			return true
		}
		// A pod that restarts in place is each of its task's instances in
		// turn: the exit names the pod, and its instances up to the one
		// status keeps while the task restarts are the ended ones.
		return ts.State == musterv1.TaskRestarting && n <= ts.Attempts
	}
	if ts.State != musterv1.TaskRestarting || !labelled {
		return false
	}
	// An exit that names another instance of the same number is that of a
	// status written when attempts counted the replacement as soon as it
	// was seen: that pod is the replacement.
	return n < ts.Attempts || (n == ts.Attempts && !named)
}

func roleStatus(s *musterv1.TrainingJobStatus, name string) *musterv1.RoleStatus {
	for i := range s.Roles {
		if s.Roles[i].Name == name {
			return &s.Roles[i]
		}
	}
	return nil
}

func tasksOf(s *musterv1.TrainingJobStatus, role string) []musterv1.TaskStatus {
	if rs := roleStatus(s, role); rs != nil {
		return rs.Tasks
	}
	return nil
}

// taskStatus is task index of a role as last written, or a new task.
func taskStatus(rs *musterv1.RoleStatus, index int32) musterv1.TaskStatus {
	// Expanded tasks are one per index, in order: look where it should be
	// first.
	if rs != nil && int(index) < len(rs.Tasks) && rs.Tasks[index].Index == index {
		return rs.Tasks[index]
	}
	if rs != nil {
		for _, t := range rs.Tasks {
			if t.Index == index {
				return t
			}
		}
	}
	return musterv1.TaskStatus{Index: index, State: musterv1.TaskCreating}
}

// rerunsInPlace is whether pod restarts in place and still runs: its
// training containers' restart rule restarts a failed one alone until the
// operator decides, so a task that failed for good would run again in it.
func rerunsInPlace(pod *corev1.Pod) bool {
	return observe.InPlaceOf(pod) != observe.NotInPlace && !observe.Ended(pod) && pod.DeletionTimestamp == nil
}
