package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// ScalableRole is the role spec.replicas and the /scale subresource size:
// the elastic role, else the job's only role, else none.
func ScalableRole(job *musterv1.TrainingJob) string {
	if rt := job.Spec.Runtime; rt != nil && rt.PyTorch != nil && rt.PyTorch.Elastic != nil {
		return rt.PyTorch.Elastic.Role
	}
	if len(job.Spec.Roles) == 1 {
		return job.Spec.Roles[0].Name
	}
	return ""
}

// Effective is the job as the operator runs it: spec.replicas, when set,
// is the scalable role's replicas. The input is not changed.
func Effective(job *musterv1.TrainingJob) *musterv1.TrainingJob {
	name := ScalableRole(job)
	if job.Spec.Replicas == nil || name == "" {
		return job
	}
	out := job.DeepCopy()
	for i := range out.Spec.Roles {
		if out.Spec.Roles[i].Name == name {
			out.Spec.Roles[i].Replicas = *job.Spec.Replicas
		}
	}
	return out
}

// defaultReplicas asks the executor to fill spec.replicas from the
// scalable role, so the /scale subresource has a field to read.
func (p *planner) defaultReplicas(in *musterv1.TrainingJob) {
	name := ScalableRole(in)
	if in.Spec.Replicas != nil || name == "" || in.DeletionTimestamp != nil {
		return
	}
	if r := roleOf(in, name); r != nil {
		p.res.DefaultReplicas = new(r.Replicas)
	}
}

// scaleStatus fills the fields the /scale subresource reads.
func (p *planner) scaleStatus() {
	name := ScalableRole(p.job)
	p.status.Replicas, p.status.Selector = 0, ""
	if name == "" {
		return
	}
	p.status.Selector = musterv1.LabelJobName + "=" + p.job.Name + "," + musterv1.LabelRole + "=" + name
	if r := roleOf(p.job, name); r != nil {
		p.status.Replicas = r.Replicas
	}
}
