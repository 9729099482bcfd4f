package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// Admission is the job's admission by a queue manager, as the controller
// observed it before the plan.
type Admission struct {
	// Queue is the queue the job asked for (a Kueue LocalQueue) and
	// Workload the queue manager's object for the job.
	Queue, Workload string
	// Admitted is whether the job may run now: admitted, and not being
	// evicted.
	Admitted bool
	// ClusterQueue is the ClusterQueue that admitted the job.
	ClusterQueue string
	// Reason and Message say why the job waits (the Suspended condition).
	Reason, Message string
}

// applyAdmission shows the job's queue and admission in its status.
func applyAdmission(a *Admission, res *Result) {
	if a == nil {
		return
	}
	st := &res.Status
	if st.Scheduling == nil {
		st.Scheduling = &musterv1.SchedulingStatus{}
	}
	st.Scheduling.Queue, st.Scheduling.Workload, st.Scheduling.ClusterQueue = a.Queue, a.Workload, ""
	if a.Admitted {
		st.Scheduling.ClusterQueue = a.ClusterQueue
	}
}
