package plan

import (
	"slices"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// ElasticRoles are the roles of the job's elastic world: the elastic role
// first, then its additional roles. None for a job without one.
func ElasticRoles(job *musterv1.TrainingJob) []string {
	e := elasticPolicy(job)
	if e == nil {
		return nil
	}
	return append([]string{e.Role}, e.AdditionalRoles...)
}

// isElastic is whether role is part of the job's elastic world.
func isElastic(job *musterv1.TrainingJob, role string) bool {
	return slices.Contains(ElasticRoles(job), role)
}

// ScalableRoles are the roles spec.replicas and the /scale subresource
// size: the elastic roles, else the job's only role, else none.
func ScalableRoles(job *musterv1.TrainingJob) []string {
	if roles := ElasticRoles(job); len(roles) > 0 {
		return roles
	}
	if len(job.Spec.Roles) == 1 {
		return []string{job.Spec.Roles[0].Name}
	}
	return nil
}

// ScalableRole is the first scalable role, or "".
func ScalableRole(job *musterv1.TrainingJob) string {
	if roles := ScalableRoles(job); len(roles) > 0 {
		return roles[0]
	}
	return ""
}

// scalableTotal is the scalable roles' replicas, summed.
func scalableTotal(job *musterv1.TrainingJob) int32 {
	var n int32
	for _, name := range ScalableRoles(job) {
		if r := roleOf(job, name); r != nil {
			n += r.Replicas
		}
	}
	return n
}

// Effective is the job as the operator runs it: spec.replicas, when set,
// is split among the scalable roles. The input is not changed.
func Effective(job *musterv1.TrainingJob) *musterv1.TrainingJob {
	names := ScalableRoles(job)
	if job.Spec.Replicas == nil || len(names) == 0 {
		return job
	}
	out := job.DeepCopy()
	roles := make([]*musterv1.Role, 0, len(names))
	for _, name := range names {
		if r := roleOf(out, name); r != nil {
			roles = append(roles, r)
		}
	}
	for i, n := range Split(*job.Spec.Replicas, roles) {
		roles[i].Replicas = n
	}
	return out
}

// Split shares total among roles: each gets its minReplicas, then the rest
// goes one task at a time to the role with the fewest tasks per
// scalingWeight that is still below its maxReplicas (the earlier role on a
// tie). A total beyond every maximum goes to the roles without one, or is
// left unplaced.
func Split(total int32, roles []*musterv1.Role) []int32 {
	out := make([]int32, len(roles))
	left := total
	for i, r := range roles {
		if r.MinReplicas != nil {
			out[i] = min(*r.MinReplicas, max(left, 0))
			left -= out[i]
		}
	}
	for ; left > 0; left-- {
		best := -1
		for i, r := range roles {
			if r.MaxReplicas != nil && out[i] >= *r.MaxReplicas {
				continue
			}
			// out[i]/w[i] < out[best]/w[best], without division.
			if best < 0 || int64(out[i])*int64(weight(roles[best])) < int64(out[best])*int64(weight(r)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out[best]++
	}
	return out
}

func weight(r *musterv1.Role) int32 {
	if r.ScalingWeight != nil {
		return *r.ScalingWeight
	}
	return 1
}

// defaultReplicas asks the executor to fill spec.replicas from the
// scalable roles, so the /scale subresource has a field to read.
func (p *planner) defaultReplicas(in *musterv1.TrainingJob) {
	if in.Spec.Replicas != nil || len(ScalableRoles(in)) == 0 || in.DeletionTimestamp != nil {
		return
	}
	p.res.DefaultReplicas = new(scalableTotal(in))
}

// scaleStatus fills the fields the /scale subresource reads.
func (p *planner) scaleStatus() {
	names := ScalableRoles(p.job)
	p.status.Replicas, p.status.Selector = 0, ""
	switch len(names) {
	case 0:
		return
	case 1:
		p.status.Selector = musterv1.LabelJobName + "=" + p.job.Name + "," + musterv1.LabelRole + "=" + names[0]
	default:
		p.status.Selector = musterv1.LabelJobName + "=" + p.job.Name + "," + musterv1.LabelElastic + "=true"
	}
	p.status.Replicas = scalableTotal(p.job)
}
