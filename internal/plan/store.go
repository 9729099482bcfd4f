package plan

import (
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// syncStore keeps the job's dedicated store pod running: made with the
// attempt, replaced when it ends, deleted when the job no longer needs it.
func (p *planner) syncStore() {
	if !objects.HasDedicatedStore(p.job) {
		p.removeStore("no dedicated store")
		return
	}
	rs := p.elasticStatus()
	pod := p.store
	switch {
	case pod == nil:
		if p.outcome != nil || p.restart != nil || p.delayed {
			return
		}
		desired, err := objects.DesiredStorePod(p.job)
		if err != nil {
			p.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonInvalidSpec, Message: err.Error()})
			return
		}
		p.res.CreatePods = append(p.res.CreatePods, desired)
	case pod.DeletionTimestamp != nil:
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		if rs.StoreEnded != pod.UID {
			rs.StoreRestarts++
			rs.StoreEnded = pod.UID
			p.event(true, musterv1.ReasonStoreRestarting, "the rendezvous store "+pod.Name+" ended ("+describeExit(ExitOf(pod, p.classifier))+"); replacing it")
		}
		p.deletePod(pod, "store ended")
	case pod.Status.Phase == corev1.PodRunning:
		p.storeReady = true
	}
}

func (p *planner) elasticStatus() *musterv1.ElasticStatus {
	e := topology.ElasticPolicy(p.job)
	if p.status.Elastic == nil {
		p.status.Elastic = &musterv1.ElasticStatus{}
	}
	rs := p.status.Elastic
	rs.Endpoint, _ = objects.RendezvousEndpoint(p.job, e, topology.ElasticRoles(p.job)[0], 0)
	rs.StorePod = ""
	if objects.HasDedicatedStore(p.job) {
		rs.StorePod = objects.StorePodName(p.job)
	}
	return rs
}

// removeStore deletes the store pod, if there is one.
func (p *planner) removeStore(reason string) {
	if p.store != nil {
		p.deletePod(p.store, reason)
	}
}

// waitsForStore is whether role's pods wait for the store: agents started
// before it could not even resolve its name.
func (p *planner) waitsForStore(role *musterv1.Role) bool {
	return topology.IsElastic(p.job, role.Name) && objects.HasDedicatedStore(p.job) && !p.storeReady
}
