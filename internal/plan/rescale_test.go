package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/testutil"
)

// checkInvariants holds after every step of every rescale.
func (w *world) checkInvariants() {
	w.t.Helper()
	for _, rs := range w.expanded().Roles {
		// Every index below replicas has one task (live, or deletion-pending
		// until its replacement may start); every task beyond is
		// deletion-pending.
		if int32(len(rs.Tasks)) < rs.Replicas {
			w.t.Fatalf("role %s: %d tasks for %d replicas", rs.Name, len(rs.Tasks), rs.Replicas)
		}
		for i, t := range rs.Tasks {
			if t.Index != int32(i) {
				w.t.Fatalf("tasks of %s out of order: %+v", rs.Name, rs.Tasks)
			}
			if t.Index >= rs.Replicas && !t.DeletionPending {
				w.t.Fatalf("role %s: task %d beyond replicas is live", rs.Name, t.Index)
			}
		}
		if rs.Pending+rs.Running+rs.Succeeded+rs.Failed > rs.Replicas {
			w.t.Fatalf("role %s counts deletion-pending tasks: %+v", rs.Name, rs)
		}
	}
	for name, pod := range w.pods {
		role := pod.Labels[musterv1.LabelRole]
		idx := podIndex(pod)
		if r := topology.Find(w.job, role); r != nil && idx >= topology.Replicas(r) {
			if t, ok := w.findTask(role, idx); !ok || !t.DeletionPending {
				w.t.Fatalf("pod %s beyond replicas without a deletion-pending task", name)
			}
		}
	}
	if w.job.Status.Phase == musterv1.PhaseFailed || w.job.Status.Phase == musterv1.PhaseSucceeded {
		w.t.Fatalf("a rescale ended the job: %+v", w.job.Status.Completion)
	}
}

func podIndex(pod *corev1.Pod) int32 { return observe.TaskIndex(pod) }

func (w *world) findTask(role string, idx int32) (musterv1.TaskStatus, bool) {
	for _, rs := range w.expanded().Roles {
		if rs.Name == role {
			for _, t := range rs.Tasks {
				if t.Index == idx {
					return t, true
				}
			}
		}
	}
	return musterv1.TaskStatus{}, false
}

func (w *world) scale(n int32, minFailed int32) {
	w.job.Spec.Roles[0].Replicas = &n
	w.job.Spec.Roles[0].Completion.MinFailed = &minFailed
}

func (w *world) steps(n int) {
	for i := 0; i < n; i++ {
		w.step()
		w.checkInvariants()
	}
}

// TestRescaleBasic replays FrameworkController's "rescalebasic"
// walkthrough: 4 tasks, minFailed 4, minSucceeded 1.
func TestRescaleBasic(t *testing.T) {
	job := testutil.MakeJob("a", "ns").UID("a").Role("a", 4).RestartPolicy(musterv1.RestartPolicyNever).
		Completion(1, 4).WithDefaults().Obj()
	w := newWorld(t, job)
	w.runAll()

	// Steps 1-4: a-2 and a-3 fail; scaling to 2 together with minFailed 2
	// acts as if the rescale were done: they are ignored and the job runs.
	w.exit("a-a-2", 1)
	w.exit("a-a-3", 1)
	w.step()
	if f := w.job.Status.Roles[0].Failed; f != 2 {
		t.Fatalf("failed = %d", f)
	}
	w.scale(2, 2)
	w.steps(2)
	if n := len(w.expanded().Roles[0].Tasks); n != 2 || len(w.pods) != 2 {
		t.Fatalf("the failed tasks are gone from status and the cluster: %d tasks, %d pods", n, len(w.pods))
	}

	// Steps 5-8: scale to 4, run, then down to 2 and, while a-2 and a-3
	// are deletion-pending (a-3's pod terminating slowly), up to 3.
	w.scale(4, 4)
	w.steps(2)
	w.runEverything()
	w.slow["a-a-3"] = true
	w.scale(2, 2)
	w.steps(1)
	if t2, _ := w.findTask("a", 2); !t2.DeletionPending || w.pods["a-a-3"].DeletionTimestamp == nil {
		t.Fatalf("a-2 deletion-pending, a-3 terminating: %+v", w.expanded().Roles[0].Tasks)
	}
	old2 := w.expanded().Roles[0].Tasks[2]
	w.scale(3, 3)
	w.steps(2)
	t2, _ := w.findTask("a", 2)
	if t2.DeletionPending || t2.PodUID == old2.PodUID || t2.Restarts != 0 {
		t.Fatalf("a-2 is replaced by a new instance at once: %+v", t2)
	}
	if t3, ok := w.findTask("a", 3); !ok || !t3.DeletionPending {
		t.Fatalf("a-3 stays deletion-pending while its pod terminates: %+v", w.expanded().Roles[0].Tasks)
	}

	// Steps 9-12: the same, but up to 5: a-3 is replaced once its pod is
	// gone, a-4 is added at once.
	w.scale(5, 5)
	w.steps(1)
	if _, ok := w.pods["a-a-4"]; !ok {
		t.Fatal("a-4 is created at once")
	}
	if t3, _ := w.findTask("a", 3); !t3.DeletionPending {
		t.Fatal("a-3 is not reused while its old pod terminates")
	}
	delete(w.pods, "a-a-3") // its node finally lets it go
	w.slow = map[string]bool{}
	w.steps(2)
	if t3, _ := w.findTask("a", 3); t3.DeletionPending || w.pods["a-a-3"] == nil {
		t.Fatalf("a-3 replaced once its pod is gone: %+v", t3)
	}
	w.runEverything()
	w.checkInvariants()
	if w.job.Status.Ready != "5/5" {
		t.Fatalf("ready = %s", w.job.Status.Ready)
	}
}

// Only a contiguous tail leaves status: a deletion-pending task whose pod is
// gone stays while a later one still terminates.
func TestCompactionIsTailOnly(t *testing.T) {
	job := testutil.MakeJob("a", "ns").UID("a").Role("a", 4).Completion(1, 4).WithDefaults().Obj()
	w := newWorld(t, job)
	w.runAll()
	w.slow["a-a-3"] = true
	w.scale(2, 2)
	w.steps(2)
	tasks := w.expanded().Roles[0].Tasks
	if len(tasks) != 4 || !tasks[2].DeletionPending || tasks[2].State != musterv1.TaskStopped {
		t.Fatalf("a-2 is gone but stays behind a-3: %+v", tasks)
	}
	delete(w.pods, "a-a-3")
	w.steps(1)
	if n := len(w.expanded().Roles[0].Tasks); n != 2 {
		t.Fatalf("the tail leaves together: %d tasks", n)
	}
}
