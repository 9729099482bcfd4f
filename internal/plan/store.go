package plan

import (
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// syncStore keeps the job's dedicated store pod running: made with the
// attempt, replaced when it ends, deleted when the job no longer needs it.
// It returns whether the store runs, so elastic tasks may start.
func syncStore(c *planContext, st *musterv1.TrainingJobStatus, v jobDecision, delayed bool, out *Result) (bool, jobDecision) {
	if !objects.HasDedicatedStore(c.job) {
		removeStore(c, "no dedicated store", out)
		return false, v
	}
	rs := elasticStatus(c, st)
	pod := c.pods.Store
	switch {
	case pod == nil:
		if v.decided() || delayed || c.pods.Held(objects.StorePodName(c.job)) {
			// An earlier attempt's store still holds the name: its
			// replacement is made once it is gone (removeStrays deletes
			// it), not asked for in vain meanwhile.
			return false, v
		}
		desired, err := objects.DesiredStorePod(c.job)
		if err != nil {
			return false, v.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonInvalidSpec, Message: err.Error()})
		}
		out.CreatePods = append(out.CreatePods, desired)
	case pod.DeletionTimestamp != nil:
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		if rs.StoreEnded != pod.UID {
			rs.StoreRestarts++
			rs.StoreEnded = pod.UID
			out.event(true, musterv1.EventReasonStoreRestarting, "the rendezvous store "+pod.Name+" ended ("+failure.DescribeExit(failure.ExitOf(pod, c.classifier))+"); replacing it")
		}
		out.deletePod(pod, "store ended")
	case pod.Status.Phase == corev1.PodRunning:
		return true, v
	}
	return false, v
}

// elasticStatus is status.elastic, made if missing, with the rendezvous
// endpoint and store pod the spec says.
func elasticStatus(c *planContext, st *musterv1.TrainingJobStatus) *musterv1.ElasticStatus {
	e := topology.ElasticPolicy(c.job)
	if st.Elastic == nil {
		st.Elastic = &musterv1.ElasticStatus{}
	}
	rs := st.Elastic
	rs.Endpoint, _ = objects.RendezvousEndpoint(c.job, e, topology.ElasticRoles(c.job)[0], 0)
	rs.StorePod = ""
	if objects.HasDedicatedStore(c.job) {
		rs.StorePod = objects.StorePodName(c.job)
	}
	return rs
}

// removeStore deletes the store pod, if there is one.
func removeStore(c *planContext, reason string, out *Result) {
	if c.pods.Store != nil {
		out.deletePod(c.pods.Store, reason)
	}
}

// waitsForStore is whether role's pods wait for the store: agents started
// before it could not even resolve its name.
func waitsForStore(job *musterv1.TrainingJob, role *musterv1.Role, storeReady bool) bool {
	return topology.IsElastic(job, role.Name) && objects.HasDedicatedStore(job) && !storeReady
}
