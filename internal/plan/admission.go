package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
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
	Reason  musterv1.ConditionReason
	Message string
	// Counts are the sizes of the roles the queue manager admitted smaller
	// than the job asked (Kueue's partial admission, down to a scalable
	// role's minReplicas): the job runs at them while admitted.
	Counts map[string]int32
}

// admittedSize is the job as the queue manager admitted it: each role
// admitted smaller runs at the admitted count, never below its minimum.
func admittedSize(job *musterv1.TrainingJob, a *Admission) *musterv1.TrainingJob {
	if a == nil || !a.Admitted || len(a.Counts) == 0 {
		return job
	}
	for i := range job.Spec.Roles {
		r := &job.Spec.Roles[i]
		if n, ok := a.Counts[r.Name]; ok && n < topology.Replicas(r) {
			r.Replicas = new(max(n, topology.MinReplicas(job, r)))
		}
	}
	return job
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
	st.Scheduling.LocalQueue, st.Scheduling.Workload, st.Scheduling.ClusterQueue = a.Queue, a.Workload, ""
	if a.Admitted {
		st.Scheduling.ClusterQueue = a.ClusterQueue
	}
}
