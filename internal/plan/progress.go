package plan

import (
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// ProgressOnly is whether a plan only moves the job's status along the way
// it is already going, and acts on nothing: its tasks move between
// Creating, Pending and Running (a task's pod and instance count are learnt
// from the pod on the way), and the ready and per-role pending and
// running counts follow, as does the Running condition's message that
// counts them. Every decision, every phase or condition, every
// end, restart and count of them differs from the written status in some
// other field, and so does any plan with an action (its decisions are
// written before it acts).
//
// Such a status may wait for the next write: a plan that is not written is
// what an operator that stopped before its status write leaves, and the
// next plan, made from the same pods, decides the same.
func ProgressOnly(job *musterv1.TrainingJob, res Result) bool {
	if res.acts() {
		return false
	}
	before, after := job.Status.DeepCopy(), res.Status.DeepCopy()
	withoutProgress(job, before)
	withoutProgress(job, after)
	return equality.Semantic.DeepEqual(before, after)
}

// StartOnly is whether a plan only starts a job that has no status
// written yet: it makes the job's Service and first pods, or sees them on
// their way, and its status says no more than that the job was created
// and is Pending (not held, queued or suspended).
// Nothing has ended, been restarted or decided, and no event tells of
// anything. Such a status may wait for the write that finds the pods
// running (the operator's --status-batch-start), so that a job whose pods
// start within the status batch is written once.
//
// The next plan made from the pods decides the same without it: a job
// with no status is planned from its pods alone, its attempt the first,
// and its start time is its first pod's (see run). The creates are taken
// from the newest job all the same: the executor asks the API server
// (fresh) when a plan that creates pods writes nothing.
//
// Every plan gives its status a phase: a job without one has had none
// written.
func StartOnly(job *musterv1.TrainingJob, res Result) bool {
	if job.Status.Phase != "" || res.Status.Phase != musterv1.PhasePending || !res.Status.IsTrue(musterv1.ConditionCreated) ||
		res.Status.Completion != nil || res.Status.Restarts.Total != 0 || len(res.Ended) > 0 {
		return false
	}
	rest := res
	rest.CreatePods, rest.CreateService = nil, nil
	return !rest.acts()
}

// countsTasks is whether the Running condition's message, with this
// reason, is the count of running tasks.
func countsTasks(reason string) bool {
	switch musterv1.ConditionReason(reason) {
	case musterv1.ReasonPodsPending, musterv1.ReasonPodsRunning, musterv1.ReasonScaling:
		return true
	}
	return false
}

// acts is whether a plan changes anything beside the job's status, or
// tells of a decision in an event.
func (r Result) acts() bool {
	return r.CreateService != nil || r.CreateSSHSecret != nil || len(r.CreatePods) > 0 || len(r.DeletePods) > 0 || r.DeleteJob || r.Scale != nil ||
		len(r.ReleasePods) > 0 || len(r.ReleaseAtOnce) > 0 || len(r.Events) > 0 || r.TensorBoard != ""
}

// withoutProgress clears what ProgressOnly lets differ: the counts, and
// which of the live states each task is in. Tasks are compared one by
// one: the short form groups tasks by state.
func withoutProgress(job *musterv1.TrainingJob, st *musterv1.TrainingJobStatus) {
	st.Ready = ""
	if c := apimeta.FindStatusCondition(st.Conditions, string(musterv1.ConditionRunning)); c != nil && countsTasks(c.Reason) {
		c.Message = ""
	}
	expandTasks(job, st)
	for i := range st.Roles {
		rs := &st.Roles[i]
		rs.Pending, rs.Running = 0, 0
		for j := range rs.Tasks {
			switch t := &rs.Tasks[j]; t.State {
			case musterv1.TaskCreating, musterv1.TaskPending, musterv1.TaskRunning:
				// A task's pod, and its instance count, are read from the
				// pod once it is seen: a Creating task's are not known yet.
				t.State, t.Attempts, t.PodUID = musterv1.TaskRunning, 0, ""
			}
		}
	}
}
