package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// scaleStatus fills the fields the /scale subresource reads.
func scaleStatus(job *musterv1.TrainingJob, st *musterv1.TrainingJobStatus) {
	names := topology.ScalableRoles(job)
	st.Replicas, st.Selector = 0, ""
	switch len(names) {
	case 0:
		return
	case 1:
		st.Selector = musterv1.LabelJobName + "=" + job.Name + "," + musterv1.LabelRole + "=" + names[0]
	default:
		st.Selector = musterv1.LabelJobName + "=" + job.Name + "," + musterv1.LabelScalable + "=true"
	}
	for _, name := range names {
		if r := topology.Find(job, name); r != nil {
			st.Replicas += topology.Replicas(r)
		}
	}
}
