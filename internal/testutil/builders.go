// Package testutil has builders for the objects tests make. Tests extend
// these instead of building objects by hand.
package testutil

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// JobBuilder builds a TrainingJob.
type JobBuilder struct{ job musterv1.TrainingJob }

// MakeJob starts a job with no roles.
func MakeJob(name, namespace string) *JobBuilder {
	return &JobBuilder{job: musterv1.TrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: musterv1.GroupVersion.String(), Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// UID sets the job's UID, for unit tests that never reach an API server.
func (b *JobBuilder) UID(uid string) *JobBuilder { b.job.UID = types.UID(uid); return b }

// Role appends a role running `sleep inf` in one container.
func (b *JobBuilder) Role(name string, replicas int32) *JobBuilder {
	b.job.Spec.Roles = append(b.job.Spec.Roles, musterv1.Role{
		Name:          name,
		Replicas:      &replicas,
		RestartPolicy: musterv1.RestartPolicyExitCode,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sleep", "inf"}}},
		}},
	})
	return b
}

func (b *JobBuilder) last() *musterv1.Role { return &b.job.Spec.Roles[len(b.job.Spec.Roles)-1] }

// RestartPolicy sets the restart policy of the last role.
func (b *JobBuilder) RestartPolicy(p musterv1.RestartPolicy) *JobBuilder {
	b.last().RestartPolicy = p
	return b
}

// Completion sets the completion policy of the last role.
func (b *JobBuilder) Completion(minSucceeded, minFailed int32) *JobBuilder {
	b.last().Completion = &musterv1.CompletionPolicy{MinSucceeded: &minSucceeded, MinFailed: &minFailed}
	return b
}

// Scalable makes the last role scalable within bounds: its replicas move
// to spec.scaling.replicas.
func (b *JobBuilder) Scalable(minReplicas, maxReplicas int32) *JobBuilder {
	r := b.last()
	s := &b.job.Spec.Scaling
	s.Replicas = ptr.To(ptr.Deref(s.Replicas, 0) + ptr.Deref(r.Replicas, 1))
	r.Replicas = nil
	s.Roles = append(s.Roles, musterv1.ScalingRole{Name: r.Name, MinReplicas: &minReplicas, MaxReplicas: maxReplicas})
	return b
}

// Elastic makes the last role scalable within bounds and part of the
// elastic world of a PyTorch job.
func (b *JobBuilder) Elastic(minReplicas, maxReplicas int32) *JobBuilder {
	b.Scalable(minReplicas, maxReplicas)
	b.PyTorch()
	if b.job.Spec.Runtime.PyTorch.Elastic == nil {
		b.job.Spec.Runtime.PyTorch.Elastic = &musterv1.ElasticPolicy{}
	}
	return b
}

// ScalingReplicas sets spec.scaling.replicas.
func (b *JobBuilder) ScalingReplicas(n int32) *JobBuilder {
	b.job.Spec.Scaling.Replicas = &n
	return b
}

// Rule appends a failure rule.
func (b *JobBuilder) Rule(r musterv1.FailureRule) *JobBuilder {
	b.job.Spec.FailurePolicy.Rules = append(b.job.Spec.FailurePolicy.Rules, r)
	return b
}

// Template edits the pod template of the last role.
func (b *JobBuilder) Template(edit func(*corev1.PodTemplateSpec)) *JobBuilder {
	edit(&b.last().Template)
	return b
}

// PyTorch selects the PyTorch runtime.
func (b *JobBuilder) PyTorch() *JobBuilder {
	if b.job.Spec.Runtime == nil {
		b.job.Spec.Runtime = &musterv1.Runtime{}
	}
	if b.job.Spec.Runtime.PyTorch == nil {
		b.job.Spec.Runtime.PyTorch = &musterv1.PyTorchRuntime{}
	}
	return b
}

// Runtime sets spec.runtime.
func (b *JobBuilder) Runtime(rt musterv1.Runtime) *JobBuilder {
	b.job.Spec.Runtime = &rt
	return b
}

// BackoffLimit sets spec.failurePolicy.backoffLimit.
func (b *JobBuilder) BackoffLimit(n int32) *JobBuilder {
	b.job.Spec.FailurePolicy.BackoffLimit = &n
	return b
}

// BackoffLimitPerTask sets spec.failurePolicy.backoffLimitPerTask.
func (b *JobBuilder) BackoffLimitPerTask(n int32) *JobBuilder {
	b.job.Spec.FailurePolicy.BackoffLimitPerTask = &n
	return b
}

// Suspend sets spec.run.execution to Suspend, or back to Start.
func (b *JobBuilder) Suspend(s bool) *JobBuilder {
	b.job.Spec.Run.Execution = musterv1.ExecutionStart
	if s {
		b.job.Spec.Run.Execution = musterv1.ExecutionSuspend
	}
	return b
}

// RestartScope sets the restart scope of the last role.
func (b *JobBuilder) RestartScope(s musterv1.RestartScope) *JobBuilder {
	b.last().RestartScope = s
	return b
}

// ActiveDeadline sets spec.run.activeDeadlineSeconds.
func (b *JobBuilder) ActiveDeadline(d time.Duration) *JobBuilder {
	b.job.Spec.Run.ActiveDeadlineSeconds = int64(d.Seconds())
	return b
}

// TTL sets spec.run.ttlSecondsAfterFinished.
func (b *JobBuilder) TTL(d time.Duration) *JobBuilder {
	b.job.Spec.Run.TTLSecondsAfterFinished = ptr.To(int32(d.Seconds()))
	return b
}

// CleanPodPolicy sets spec.run.cleanPodPolicy.
func (b *JobBuilder) CleanPodPolicy(p musterv1.CleanPodPolicy) *JobBuilder {
	b.job.Spec.Run.CleanPodPolicy = p
	return b
}

// WithDefaults fills in what the API server's schema defaults would, for
// unit tests that never reach one.
func (b *JobBuilder) WithDefaults() *JobBuilder {
	if b.job.Spec.Run.CleanPodPolicy == "" {
		b.job.Spec.Run.CleanPodPolicy = musterv1.CleanPodPolicyRunning
	}
	if b.job.Spec.FailurePolicy.BackoffLimit == nil {
		b.job.Spec.FailurePolicy.BackoffLimit = ptr.To(musterv1.DefaultBackoffLimit)
	}
	return b
}

// Obj returns a copy of the job. A role whose restart scope is not set
// gets the one its shape calls for: Task in an elastic role, Job where
// tasks learn their peers once (a runtime other than volcanoJob) or a gang
// backend is named, Task otherwise; RestartScope sets another.
func (b *JobBuilder) Obj() *musterv1.TrainingJob {
	job := b.job.DeepCopy()
	for i := range job.Spec.Roles {
		if r := &job.Spec.Roles[i]; r.RestartScope == "" {
			r.RestartScope = job.Spec.ShapeRestartScope(r.Name)
		}
	}
	return job
}

// PodBuilder builds an observed pod of a job, as the operator made it.
type PodBuilder struct{ pod corev1.Pod }

// MakePod starts the pod of task index of role, attempt 1, phase Pending.
func MakePod(job *musterv1.TrainingJob, role string, index int32) *PodBuilder {
	name := job.Name + "-" + role + "-" + strconv.Itoa(int(index))
	return &PodBuilder{pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: job.Namespace, UID: types.UID(name + "-uid-1"),
			Labels: map[string]string{
				musterv1.LabelJobName: job.Name, musterv1.LabelRole: role,
				musterv1.LabelTaskIndex: strconv.Itoa(int(index)), musterv1.LabelJobAttempt: "0",
				musterv1.LabelTaskAttempt: "1",
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

// Attempt sets the task attempt and a UID that goes with it.
func (b *PodBuilder) Attempt(n int) *PodBuilder {
	b.pod.Labels[musterv1.LabelTaskAttempt] = strconv.Itoa(n)
	b.pod.UID = types.UID(b.pod.Name + "-uid-" + strconv.Itoa(n))
	return b
}

// Running marks the pod running.
func (b *PodBuilder) Running() *PodBuilder { b.pod.Status.Phase = corev1.PodRunning; return b }

// Exited marks the pod ended with code from its container "main".
func (b *PodBuilder) Exited(code int32, reason string, at time.Time) *PodBuilder {
	b.pod.Status = ExitedStatus(code, reason, at)
	return b
}

// PodReason sets the pod-level reason, e.g. Evicted.
func (b *PodBuilder) PodReason(reason string) *PodBuilder { b.pod.Status.Reason = reason; return b }

// Deleting marks the pod as being deleted.
func (b *PodBuilder) Deleting() *PodBuilder {
	b.pod.DeletionTimestamp = &metav1.Time{Time: time.Unix(0, 0)}
	return b
}

// Obj returns a copy of the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

// ExitedStatus is the status of a pod whose one container "main" exited
// with code.
func ExitedStatus(code int32, reason string, at time.Time) corev1.PodStatus {
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	return corev1.PodStatus{
		Phase: phase,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(at),
			}},
		}},
	}
}

// DependsOn makes the last role wait for role to reach when.
func (b *JobBuilder) DependsOn(role string, when musterv1.DependencyCondition) *JobBuilder {
	r := b.last()
	r.DependsOn = append(r.DependsOn, musterv1.Dependency{Role: role, When: when})
	return b
}

// Progress asks for the job's training progress to be read from port,
// with the shortest interval, and stallSeconds (0: none).
func (b *JobBuilder) Progress(port, stallSeconds int32) *JobBuilder {
	b.job.Spec.Progress = &musterv1.Progress{Port: port, IntervalSeconds: 30, StallSeconds: stallSeconds}
	return b
}

// Execution sets spec.run.execution.
func (b *JobBuilder) Execution(e musterv1.Execution) *JobBuilder {
	b.job.Spec.Run.Execution = e
	return b
}

// Debug sets spec.run.debug.
func (b *JobBuilder) Debug(d musterv1.DebugPolicy) *JobBuilder {
	b.job.Spec.Run.Debug = &d
	return b
}

// Env is a container's plain variables by name.
func Env(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// Scheduling sets spec.scheduling.
func (b *JobBuilder) Scheduling(s musterv1.Scheduling) *JobBuilder {
	b.job.Spec.Scheduling = s
	return b
}

// RoleTopology sets the last role's topology request.
func (b *JobBuilder) RoleTopology(level string, mode musterv1.TopologyMode) *JobBuilder {
	b.last().Topology = musterv1.Topology{Level: level, Mode: mode}
	return b
}

// CreatedAt sets the job's creation time.
func (b *JobBuilder) CreatedAt(t time.Time) *JobBuilder {
	b.job.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Status edits the job's status, as an operator would have written it.
func (b *JobBuilder) Status(edit func(*musterv1.TrainingJobStatus)) *JobBuilder {
	edit(&b.job.Status)
	return b
}

// Labels adds labels to the job.
func (b *JobBuilder) Labels(kv ...string) *JobBuilder {
	if b.job.Labels == nil {
		b.job.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b.job.Labels[kv[i]] = kv[i+1]
	}
	return b
}

// StartedAt marks the pod's container "main" running since t.
func (b *PodBuilder) StartedAt(t time.Time) *PodBuilder {
	b.pod.Status.Phase = corev1.PodRunning
	b.pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t)}},
	}}
	return b
}

// TensorBoard gives the last role a claim volume named logs and the job a
// TensorBoard that reads it, with ttl after the job finished (none when
// negative).
func (b *JobBuilder) TensorBoard(subPath string, ttl time.Duration) *JobBuilder {
	spec := &b.last().Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: b.job.Name + "-logs"}}})
	b.job.Spec.TensorBoard = musterv1.TensorBoard{Image: "tensorboard:test",
		Logs: musterv1.TensorBoardLogs{Volume: "logs", SubPath: subPath}}
	if ttl >= 0 {
		b.job.Spec.TensorBoard.TTLSecondsAfterFinished = ptr.To(int32(ttl.Seconds()))
	}
	return b
}
