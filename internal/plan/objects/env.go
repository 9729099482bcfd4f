package objects

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// taskRef names one task of a job.
type taskRef struct {
	job         *musterv1.TrainingJob
	role        *musterv1.Role
	index       int32
	taskAttempt int32
}

func (t taskRef) podName() string { return PodName(t.job.Name, t.role.Name, t.index) }

// musterEnv is the set of variables every container of every job gets,
// and MUSTER_PROGRESS_PORT for a job that asks for its progress read.
func musterEnv(t taskRef) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: musterv1.EnvJobNamespace, Value: t.job.Namespace},
		{Name: musterv1.EnvJobName, Value: t.job.Name},
		{Name: musterv1.EnvJobUID, Value: string(t.job.UID)},
		{Name: musterv1.EnvRoleName, Value: t.role.Name},
		{Name: musterv1.EnvRoleReplicas, Value: strconv.Itoa(int(topology.Replicas(t.role)))},
		{Name: musterv1.EnvTaskIndex, Value: strconv.Itoa(int(t.index))},
		{Name: musterv1.EnvJobAttempt, Value: strconv.Itoa(int(t.job.Status.Attempt))},
		{Name: musterv1.EnvTaskAttempt, Value: strconv.Itoa(int(t.taskAttempt))},
		{Name: musterv1.EnvPodName, Value: t.podName()},
		{Name: musterv1.EnvPodUID, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"},
		}},
		{Name: musterv1.EnvServiceName, Value: ServiceName(t.job)},
	}
	if p := t.job.Spec.Progress; p.Enabled() {
		env = append(env, corev1.EnvVar{Name: musterv1.EnvProgressPort, Value: strconv.Itoa(int(p.ServePort()))})
	}
	return env
}

// prependEnv puts env before each container's own variables, dropping any
// of ours the user set too: the user's value wins, and $(NAME) references in
// later user variables still resolve to the injected ones.
func prependEnv(containers []corev1.Container, env []corev1.EnvVar) {
	for i := range containers {
		c := &containers[i]
		own := make(map[string]bool, len(c.Env))
		for _, e := range c.Env {
			own[e.Name] = true
		}
		merged := make([]corev1.EnvVar, 0, len(env)+len(c.Env))
		for _, e := range env {
			if !own[e.Name] {
				merged = append(merged, e)
			}
		}
		c.Env = append(merged, c.Env...)
	}
}
