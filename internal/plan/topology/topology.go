// Package topology reads what a job's spec says about its roles: how many tasks
// each has once spec.scaling.replicas is split among the scalable ones,
// which roles scale and which form an elastic world, and which role is the
// PyTorch master. Every function here is pure and reads only the spec.
package topology

import (
	"slices"

	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// ScalableRoles are the roles spec.scaling sizes, in its order; none
// without spec.scaling.
func ScalableRoles(job *musterv1.TrainingJob) []string {
	s := &job.Spec.Scaling
	if len(s.Roles) == 0 {
		return nil
	}
	out := make([]string, 0, len(s.Roles))
	for _, r := range s.Roles {
		out = append(out, r.Name)
	}
	return out
}

// ElasticRoles are the roles of the job's elastic world: the scalable
// roles of an elastic PyTorch job. None for any other job.
func ElasticRoles(job *musterv1.TrainingJob) []string {
	if ElasticPolicy(job) == nil {
		return nil
	}
	return ScalableRoles(job)
}

// IsElastic is whether role is part of the job's elastic world.
func IsElastic(job *musterv1.TrainingJob, role string) bool {
	return slices.Contains(ElasticRoles(job), role)
}

// ScalingOf is the bounds of a scalable role, or nil.
func ScalingOf(job *musterv1.TrainingJob, name string) *musterv1.ScalingRole {
	roles := job.Spec.Scaling.Roles
	for i := range roles {
		if roles[i].Name == name {
			return &roles[i]
		}
	}
	return nil
}

// MinReplicas is the fewest tasks a scalable role may have (its
// minReplicas, default 1); a role that does not scale has exactly its
// replicas.
func MinReplicas(job *musterv1.TrainingJob, role *musterv1.Role) int32 {
	if s := ScalingOf(job, role.Name); s != nil {
		return ptr.Deref(s.MinReplicas, 1)
	}
	return Replicas(role)
}

// MaxReplicas is the most tasks a role may have.
func MaxReplicas(job *musterv1.TrainingJob, role *musterv1.Role) int32 {
	if s := ScalingOf(job, role.Name); s != nil {
		return s.MaxReplicas
	}
	return Replicas(role)
}

// Replicas is a role's size: its replicas, 1 when unset. In a job that
// went through Effective every role has it set.
func Replicas(role *musterv1.Role) int32 { return ptr.Deref(role.Replicas, 1) }

// Effective is the job as the operator runs it: spec.scaling.replicas split
// among the scalable roles, and every role's replicas set. The input is not
// changed. Only the spec is copied: it is what differs, and its templates
// become parts of the objects made from it. Metadata and status, the bulk
// of a job read from the cluster, are shared with the input: read them
// through the result, never change them.
func Effective(job *musterv1.TrainingJob) *musterv1.TrainingJob {
	out := &musterv1.TrainingJob{TypeMeta: job.TypeMeta, ObjectMeta: job.ObjectMeta, Spec: *job.Spec.DeepCopy(), Status: job.Status}
	for i := range out.Spec.Roles {
		out.Spec.Roles[i].Replicas = new(Replicas(&out.Spec.Roles[i]))
	}
	s := &job.Spec.Scaling
	for i, n := range Split(ptr.Deref(s.Replicas, 0), s.Roles) {
		if r := Find(out, s.Roles[i].Name); r != nil {
			r.Replicas = new(n)
		}
	}
	return out
}

// Split shares total among roles: each gets its minReplicas, then the rest
// goes one task at a time to the role with the fewest tasks per weight that
// is still below its maxReplicas (the earlier role on a tie). A total
// beyond every maximum is left unplaced.
func Split(total int32, roles []musterv1.ScalingRole) []int32 {
	out := make([]int32, len(roles))
	left := total
	for i, r := range roles {
		out[i] = min(ptr.Deref(r.MinReplicas, 1), max(left, 0))
		left -= out[i]
	}
	for ; left > 0; left-- {
		best := -1
		for i, r := range roles {
			if out[i] >= r.MaxReplicas {
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

func weight(r musterv1.ScalingRole) int32 { return max(r.Weight, 1) }

// Autoscales is whether the job asks for the throughput autoscaler: its
// metric, which is required, is set.
func Autoscales(job *musterv1.TrainingJob) bool {
	m := job.Spec.Scaling.Autoscaling.Metric
	return m.LogRegex != "" || m.Endpoint.Port != 0
}

// Find is the role of the job named name, or nil.
func Find(job *musterv1.TrainingJob, name string) *musterv1.Role {
	for i := range job.Spec.Roles {
		if job.Spec.Roles[i].Name == name {
			return &job.Spec.Roles[i]
		}
	}
	return nil
}

// ElasticPolicy is the job's elastic policy, or nil.
func ElasticPolicy(job *musterv1.TrainingJob) *musterv1.ElasticPolicy {
	if rt := job.Spec.Runtime; rt != nil && rt.PyTorch != nil {
		return rt.PyTorch.Elastic
	}
	return nil
}

// MasterRole is the role whose task 0 is rank 0 of a static PyTorch world.
func MasterRole(job *musterv1.TrainingJob) string {
	if rt := job.Spec.Runtime; rt != nil && rt.PyTorch != nil && rt.PyTorch.MasterRole != "" {
		return rt.PyTorch.MasterRole
	}
	for _, r := range job.Spec.Roles {
		if r.Name == "master" {
			return r.Name
		}
	}
	if len(job.Spec.Roles) == 0 {
		return ""
	}
	return job.Spec.Roles[0].Name
}
