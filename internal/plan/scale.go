package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// scaleStatus fills the fields the /scale subresource reads.
func (p *planner) scaleStatus() {
	names := topology.ScalableRoles(p.job)
	p.status.Replicas, p.status.Selector = 0, ""
	switch len(names) {
	case 0:
		return
	case 1:
		p.status.Selector = musterv1.LabelJobName + "=" + p.job.Name + "," + musterv1.LabelRole + "=" + names[0]
	default:
		p.status.Selector = musterv1.LabelJobName + "=" + p.job.Name + "," + musterv1.LabelScalable + "=true"
	}
	for _, name := range names {
		if r := topology.Find(p.job, name); r != nil {
			p.status.Replicas += topology.Replicas(r)
		}
	}
}
