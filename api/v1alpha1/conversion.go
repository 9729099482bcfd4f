package v1alpha1

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiconversion "k8s.io/apimachinery/pkg/conversion"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/muster-dev/muster/api/v1beta1"
)

// A TrainingJob converts to v1beta1, the hub, and back without loss: what
// one version cannot say of the other travels in an annotation, and comes
// back on the way back while the value it was converted to is unchanged.
// The fields are converted one by one by conversion-gen
// (zz_generated.conversion.go); what differs is below.
//
// What differs, v1alpha1 to v1beta1:
//   - spec.roles[].restartScope is new: it gets the scope v1alpha1 implied
//     (ImpliedRestartScope), so a job keeps its behaviour.
//   - spec.failurePolicy.retry.maxRetries is gone, merged into the one
//     budget, backoffLimit: OnFailure with maxRetries 0 or unset retried
//     only Transient failures, and is OnTransientFailure; with maxRetries of
//     1 or more it is OnFailure.
//   - the rule action TerminateJob is FailJob, which v1beta1 never retries;
//     v1alpha1's FailJob, which retry could still undo, is FailJob too.
//   - spec.run.suspend is spec.run.execution: Suspend.
//   - spec.failurePolicy.restartMode, spec.run.resumeRequest,
//     spec.progress, spec.runtime.paddle.launcher and the topologies
//     (spec.scheduling.topology, spec.roles[].topology) are new: v1alpha1
//     keeps them in the annotation alone.
//   - status is never kept in the annotation: v1alpha1's status has every
//     v1beta1 status field (status.mpi, status.progress and
//     status.attempts[].podRestarts included), converted field by field.
//     The annotation is the writer's to set, and a write of the main
//     resource carries it while its status is the old object's: status
//     read from it would be status set without the status subresource (an
//     sshSecretName of the writer's own Secret, whose key the job's pods
//     would trust).
//   - classification.disabled is enabled, skipInitContainers is
//     runInitContainers; spec.scheduling.queue is volcanoQueue,
//     status.scheduling.queue is localQueue, spec.runtime.volcano is
//     volcanoJob.
const (
	// AnnotationV1alpha1Fields holds, on a v1beta1 object, the v1alpha1
	// values it cannot hold.
	AnnotationV1alpha1Fields = "muster.dev/v1alpha1-fields"
	// AnnotationV1beta1Fields holds, on a v1alpha1 object, the v1beta1
	// values it cannot hold.
	AnnotationV1beta1Fields = "muster.dev/v1beta1-fields"
)

// DefaultGangBackend is the gang backend of jobs whose spec and status name
// none, for the restart scope a v1alpha1 job implies (the operator's
// --default-gang-backend). The conversion webhook runs in the operator,
// which sets it once, at start, before it serves.
var DefaultGangBackend = GangNone

// kept is a value one version lost on conversion, with the value the other
// version got for it (its guard): it comes back only while that is
// unchanged. A change made through the other version wins.
type kept[T any] struct {
	Value T               `json:"value"`
	Guard json.RawMessage `json:"guard"`
}

// alphaFields are the v1alpha1 values a v1beta1 object cannot hold.
type alphaFields struct {
	Rules *kept[[]FailureRule] `json:"rules,omitempty"`
	Retry *kept[*RetryPolicy]  `json:"retry,omitempty"`
	Run   *kept[runState]      `json:"run,omitempty"`
}

// runState is what v1alpha1 says about whether pods should exist.
type runState struct {
	Execution Execution `json:"execution,omitempty"`
	Suspend   *bool     `json:"suspend,omitempty"`
}

// betaFields are the v1beta1 values a v1alpha1 object cannot hold.
type betaFields struct {
	Rules         *kept[[]v1beta1.FailureRule]  `json:"rules,omitempty"`
	Retry         *kept[*v1beta1.RetryPolicy]   `json:"retry,omitempty"`
	Scopes        *kept[[]v1beta1.RestartScope] `json:"restartScopes,omitempty"`
	ResumeRequest string                        `json:"resumeRequest,omitempty"`
	RestartMode   v1beta1.RestartMode           `json:"restartMode,omitempty"`
	// Progress is spec.progress, which v1alpha1 cannot change either.
	// Nothing of status is kept here: v1alpha1's status holds all of it.
	Progress *v1beta1.Progress `json:"progress,omitempty"`
	// PaddleLauncher is spec.runtime.paddle.launcher, which v1alpha1
	// cannot change either.
	PaddleLauncher v1beta1.PaddleLauncher `json:"paddleLauncher,omitempty"`
	// Topology is spec.scheduling.topology and Roles each role's
	// spec.roles[].topology and restartMode, by position, which v1alpha1
	// cannot change either.
	Topology *v1beta1.Topology `json:"topology,omitempty"`
	Roles    []roleKept        `json:"roleTopology,omitempty"`
}

// keptTopology is t to keep, nil when it is empty.
func keptTopology(t v1beta1.Topology) *v1beta1.Topology {
	if t == (v1beta1.Topology{}) {
		return nil
	}
	return &t
}

// roleKept is what a role holds that v1alpha1 cannot, kept under the
// role's name: restored only to a role of that name at that position. Its
// topology is nil for none.
type roleKept struct {
	Role        string              `json:"role"`
	Topology    *v1beta1.Topology   `json:"topology,omitempty"`
	RestartMode v1beta1.RestartMode `json:"restartMode,omitempty"`
}

// empty is whether nothing is kept.
func (b betaFields) empty() bool {
	return b.Rules == nil && b.Retry == nil && b.Scopes == nil && b.ResumeRequest == "" && b.RestartMode == "" &&
		b.Progress == nil && b.PaddleLauncher == "" && b.Topology == nil && b.Roles == nil
}

// ConvertTo converts this job to the hub version, v1beta1.
func (src *TrainingJob) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta1.TrainingJob)
	// The generated conversion shares memory between the two; the copy
	// keeps src as it was.
	in := src.DeepCopy()
	var lost betaFields
	takeAnnotation(&in.ObjectMeta, AnnotationV1beta1Fields, &lost)
	if err := up(in, dst); err != nil {
		return err
	}
	restoreBeta(dst, in, lost)
	// What the way back would not give again is kept on dst.
	var back TrainingJob
	if err := down(dst.DeepCopy(), &back); err != nil {
		return err
	}
	var keep alphaFields
	keepIfDiffer(&keep.Rules, in.Spec.FailurePolicy.Rules, back.Spec.FailurePolicy.Rules, dst.Spec.FailurePolicy.Rules)
	keepIfDiffer(&keep.Retry, in.Spec.FailurePolicy.Retry, back.Spec.FailurePolicy.Retry, dst.Spec.FailurePolicy.Retry)
	keepIfDiffer(&keep.Run, runStateOf(in), runStateOf(&back), dst.Spec.Run.Execution)
	return putAnnotation(&dst.ObjectMeta, AnnotationV1alpha1Fields, keep, keep != alphaFields{})
}

// ConvertFrom converts the hub version, v1beta1, to this job.
func (dst *TrainingJob) ConvertFrom(hub conversion.Hub) error {
	in := hub.(*v1beta1.TrainingJob).DeepCopy()
	var lost alphaFields
	takeAnnotation(&in.ObjectMeta, AnnotationV1alpha1Fields, &lost)
	if err := down(in, dst); err != nil {
		return err
	}
	restoreAlpha(dst, in, lost)
	var back v1beta1.TrainingJob
	if err := up(dst.DeepCopy(), &back); err != nil {
		return err
	}
	var keep betaFields
	keepIfDiffer(&keep.Rules, in.Spec.FailurePolicy.Rules, back.Spec.FailurePolicy.Rules, dst.Spec.FailurePolicy.Rules)
	keepIfDiffer(&keep.Retry, in.Spec.FailurePolicy.Retry, back.Spec.FailurePolicy.Retry, dst.Spec.FailurePolicy.Retry)
	keepIfDiffer(&keep.Scopes, restartScopes(&in.Spec), restartScopes(&back.Spec), roleNames(dst))
	keep.ResumeRequest = in.Spec.Run.ResumeRequest
	keep.RestartMode = in.Spec.FailurePolicy.RestartMode
	keep.Progress = in.Spec.Progress
	if rt := in.Spec.Runtime; rt != nil && rt.Paddle != nil {
		keep.PaddleLauncher = rt.Paddle.Launcher
	}
	keep.Topology = keptTopology(in.Spec.Scheduling.Topology)
	if slices.ContainsFunc(in.Spec.Roles, func(r v1beta1.Role) bool { return keptTopology(r.Topology) != nil || r.RestartMode != "" }) {
		for _, r := range in.Spec.Roles {
			keep.Roles = append(keep.Roles, roleKept{Role: r.Name, Topology: keptTopology(r.Topology), RestartMode: r.RestartMode})
		}
	}
	return putAnnotation(&dst.ObjectMeta, AnnotationV1beta1Fields, keep, !keep.empty())
}

// up is the conversion to v1beta1 without annotations.
func up(in *TrainingJob, out *v1beta1.TrainingJob) error {
	if err := Convert_v1alpha1_TrainingJob_To_v1beta1_TrainingJob(in, out, nil); err != nil {
		return err
	}
	// The generated conversion shares slices and pointers with in: what
	// changes here is copied first.
	fp := &out.Spec.FailurePolicy
	fp.Rules = slices.Clone(fp.Rules)
	if fp.Retry != nil {
		fp.Retry = ptr.To(*fp.Retry)
	}
	for i := range fp.Rules {
		if in.Spec.FailurePolicy.Rules[i].Action == ActionTerminateJob {
			fp.Rules[i].Action = v1beta1.ActionFailJob
		}
	}
	if r := in.Spec.FailurePolicy.Retry; r != nil && r.Policy != RetryAlways {
		fp.Retry.Policy = v1beta1.RetryOnTransientFailure
		if ptr.Deref(r.MaxRetries, 0) > 0 {
			fp.Retry.Policy = v1beta1.RetryOnFailure
		}
	}
	out.Spec.Roles = slices.Clone(out.Spec.Roles)
	for i := range out.Spec.Roles {
		out.Spec.Roles[i].RestartScope = ImpliedRestartScope(in, in.Spec.Roles[i].Name)
	}
	return nil
}

// down is the conversion to v1alpha1 without annotations.
func down(in *v1beta1.TrainingJob, out *TrainingJob) error {
	if err := Convert_v1beta1_TrainingJob_To_v1alpha1_TrainingJob(in, out, nil); err != nil {
		return err
	}
	fp := &out.Spec.FailurePolicy
	fp.Rules = slices.Clone(fp.Rules)
	if fp.Retry != nil {
		fp.Retry = ptr.To(*fp.Retry)
	}
	for i := range fp.Rules {
		switch in.Spec.FailurePolicy.Rules[i].Action {
		case v1beta1.ActionFailJob:
			// v1beta1's FailJob is final: v1alpha1's TerminateJob.
			fp.Rules[i].Action = ActionTerminateJob
		case v1beta1.ActionRestartJobAndIgnoreBackoffLimit:
			fp.Rules[i].Action = ActionRestartJob
		}
	}
	if r := in.Spec.FailurePolicy.Retry; r != nil {
		switch r.Policy {
		case v1beta1.RetryNever:
			fp.Retry = nil
		case v1beta1.RetryOnTransientFailure:
			fp.Retry.Policy = RetryOnFailure
		case v1beta1.RetryAlways:
		default: // OnFailure: retried while the one budget lasts.
			fp.Retry.Policy = RetryOnFailure
			fp.Retry.MaxRetries = ptr.To(ptr.Deref(in.Spec.FailurePolicy.BackoffLimit, v1beta1.DefaultBackoffLimit))
		}
	}
	return nil
}

// ImpliedRestartScope is the scope v1alpha1 gave a restart that role's
// restartPolicy decides: Task in an elastic role; else Job in a job with a
// runtime other than volcano, whose tasks learn their peers once, and in a
// gang-scheduled job; else Task.
func ImpliedRestartScope(job *TrainingJob, role string) v1beta1.RestartScope {
	rt := job.Spec.Runtime
	elastic := rt != nil && rt.PyTorch != nil && rt.PyTorch.Elastic != nil &&
		slices.ContainsFunc(job.Spec.Scaling.Roles, func(s ScalingRole) bool { return s.Name == role })
	backend := DefaultGangBackend
	if job.Spec.Scheduling.Backend != "" {
		backend = job.Spec.Scheduling.Backend
	}
	if s := job.Status.Scheduling; s != nil && s.Backend != "" {
		backend = s.Backend
	}
	return v1beta1.ShapeRestartScope(elastic, rt != nil && rt.Volcano == nil, backend != "" && backend != GangNone)
}

// restoreBeta puts back the v1beta1 values an earlier conversion to
// v1alpha1 lost, where the v1alpha1 values they became are unchanged.
func restoreBeta(dst *v1beta1.TrainingJob, from *TrainingJob, lost betaFields) {
	restore(lost.Rules, from.Spec.FailurePolicy.Rules, &dst.Spec.FailurePolicy.Rules)
	restore(lost.Retry, from.Spec.FailurePolicy.Retry, &dst.Spec.FailurePolicy.Retry)
	var scopes []v1beta1.RestartScope
	if restore(lost.Scopes, roleNames(from), &scopes) && len(scopes) == len(dst.Spec.Roles) {
		for i := range dst.Spec.Roles {
			dst.Spec.Roles[i].RestartScope = scopes[i]
		}
	}
	dst.Spec.Run.ResumeRequest = lost.ResumeRequest
	dst.Spec.FailurePolicy.RestartMode = lost.RestartMode
	dst.Spec.Progress = lost.Progress
	if rt := dst.Spec.Runtime; rt != nil && rt.Paddle != nil {
		rt.Paddle.Launcher = lost.PaddleLauncher
	}
	if lost.Topology != nil {
		dst.Spec.Scheduling.Topology = *lost.Topology
	}
	if len(lost.Roles) == len(dst.Spec.Roles) {
		for i, kept := range lost.Roles {
			if dst.Spec.Roles[i].Name != kept.Role {
				continue
			}
			if kept.Topology != nil {
				dst.Spec.Roles[i].Topology = *kept.Topology
			}
			dst.Spec.Roles[i].RestartMode = kept.RestartMode
		}
	}
}

// restoreAlpha puts back the v1alpha1 values an earlier conversion to
// v1beta1 lost, where the v1beta1 values they became are unchanged.
func restoreAlpha(dst *TrainingJob, from *v1beta1.TrainingJob, lost alphaFields) {
	restore(lost.Rules, from.Spec.FailurePolicy.Rules, &dst.Spec.FailurePolicy.Rules)
	restore(lost.Retry, from.Spec.FailurePolicy.Retry, &dst.Spec.FailurePolicy.Retry)
	var run runState
	if restore(lost.Run, from.Spec.Run.Execution, &run) {
		dst.Spec.Run.Execution, dst.Spec.Run.Suspend = run.Execution, run.Suspend
	}
}

// keepIfDiffer keeps had, guarded by now, when the way back gives got
// instead.
func keepIfDiffer[T, G any](into **kept[T], had, got T, now G) {
	if sameJSON(had, got) {
		return
	}
	*into = &kept[T]{Value: had, Guard: mustJSON(now)}
}

// restore sets *into to k's value when k is set and its guard is now.
func restore[T, G any](k *kept[T], now G, into *T) bool {
	if k == nil || string(k.Guard) != string(mustJSON(now)) {
		return false
	}
	*into = k.Value
	return true
}

func sameJSON(a, b any) bool { return string(mustJSON(a)) == string(mustJSON(b)) }

// mustJSON marshals API values, which always marshal.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// takeAnnotation reads and removes annotation key into v. An annotation
// that does not parse is dropped: it was not written by a conversion.
func takeAnnotation(m *metav1.ObjectMeta, key string, v any) {
	s, ok := m.Annotations[key]
	if !ok {
		return
	}
	delete(m.Annotations, key)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	_ = json.Unmarshal([]byte(s), v)
}

// putAnnotation writes v in annotation key, when it is not empty.
func putAnnotation(m *metav1.ObjectMeta, key string, v any, nonEmpty bool) error {
	if !nonEmpty {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = string(b)
	return nil
}

func runStateOf(job *TrainingJob) runState {
	return runState{Execution: job.Spec.Run.Execution, Suspend: job.Spec.Run.Suspend}
}

func restartScopes(spec *v1beta1.TrainingJobSpec) []v1beta1.RestartScope {
	out := make([]v1beta1.RestartScope, 0, len(spec.Roles))
	for _, r := range spec.Roles {
		out = append(out, r.RestartScope)
	}
	return out
}

func roleNames(job *TrainingJob) []string {
	out := make([]string, 0, len(job.Spec.Roles))
	for _, r := range job.Spec.Roles {
		out = append(out, r.Name)
	}
	return out
}

// The fields conversion-gen cannot convert by itself.

// Convert_v1alpha1_Classification_To_v1beta1_Classification converts disabled to enabled.
func Convert_v1alpha1_Classification_To_v1beta1_Classification(in *Classification, out *v1beta1.Classification, s apiconversion.Scope) error {
	out.Enabled = not(in.Disabled)
	return autoConvert_v1alpha1_Classification_To_v1beta1_Classification(in, out, s)
}

// Convert_v1beta1_Classification_To_v1alpha1_Classification converts enabled to disabled.
func Convert_v1beta1_Classification_To_v1alpha1_Classification(in *v1beta1.Classification, out *Classification, s apiconversion.Scope) error {
	out.Disabled = not(in.Enabled)
	return autoConvert_v1beta1_Classification_To_v1alpha1_Classification(in, out, s)
}

// Convert_v1alpha1_DebugPolicy_To_v1beta1_DebugPolicy converts skipInitContainers to runInitContainers.
func Convert_v1alpha1_DebugPolicy_To_v1beta1_DebugPolicy(in *DebugPolicy, out *v1beta1.DebugPolicy, s apiconversion.Scope) error {
	out.RunInitContainers = not(in.SkipInitContainers)
	return autoConvert_v1alpha1_DebugPolicy_To_v1beta1_DebugPolicy(in, out, s)
}

// Convert_v1beta1_DebugPolicy_To_v1alpha1_DebugPolicy converts runInitContainers to skipInitContainers.
func Convert_v1beta1_DebugPolicy_To_v1alpha1_DebugPolicy(in *v1beta1.DebugPolicy, out *DebugPolicy, s apiconversion.Scope) error {
	out.SkipInitContainers = not(in.RunInitContainers)
	return autoConvert_v1beta1_DebugPolicy_To_v1alpha1_DebugPolicy(in, out, s)
}

// Convert_v1alpha1_RoleDebug_To_v1beta1_RoleDebug converts skipInitContainers to runInitContainers.
func Convert_v1alpha1_RoleDebug_To_v1beta1_RoleDebug(in *RoleDebug, out *v1beta1.RoleDebug, s apiconversion.Scope) error {
	out.RunInitContainers = not(in.SkipInitContainers)
	return autoConvert_v1alpha1_RoleDebug_To_v1beta1_RoleDebug(in, out, s)
}

// Convert_v1beta1_RoleDebug_To_v1alpha1_RoleDebug converts runInitContainers to skipInitContainers.
func Convert_v1beta1_RoleDebug_To_v1alpha1_RoleDebug(in *v1beta1.RoleDebug, out *RoleDebug, s apiconversion.Scope) error {
	out.SkipInitContainers = not(in.RunInitContainers)
	return autoConvert_v1beta1_RoleDebug_To_v1alpha1_RoleDebug(in, out, s)
}

// Convert_v1alpha1_RetryPolicy_To_v1beta1_RetryPolicy converts what needs
// no other field; up maps the policy, which needs maxRetries.
func Convert_v1alpha1_RetryPolicy_To_v1beta1_RetryPolicy(in *RetryPolicy, out *v1beta1.RetryPolicy, s apiconversion.Scope) error {
	return autoConvert_v1alpha1_RetryPolicy_To_v1beta1_RetryPolicy(in, out, s)
}

// Convert_v1beta1_FailurePolicy_To_v1alpha1_FailurePolicy drops
// restartMode, which v1alpha1 keeps in the annotation.
func Convert_v1beta1_FailurePolicy_To_v1alpha1_FailurePolicy(in *v1beta1.FailurePolicy, out *FailurePolicy, s apiconversion.Scope) error {
	return autoConvert_v1beta1_FailurePolicy_To_v1alpha1_FailurePolicy(in, out, s)
}

// Convert_v1beta1_Role_To_v1alpha1_Role drops restartScope, which
// ConvertFrom keeps when v1alpha1 would not imply it, and topology, which
// it keeps.
func Convert_v1beta1_Role_To_v1alpha1_Role(in *v1beta1.Role, out *Role, s apiconversion.Scope) error {
	return autoConvert_v1beta1_Role_To_v1alpha1_Role(in, out, s)
}

// Convert_v1beta1_TrainingJobSpec_To_v1alpha1_TrainingJobSpec drops
// progress; ConvertFrom keeps it.
func Convert_v1beta1_TrainingJobSpec_To_v1alpha1_TrainingJobSpec(in *v1beta1.TrainingJobSpec, out *TrainingJobSpec, s apiconversion.Scope) error {
	return autoConvert_v1beta1_TrainingJobSpec_To_v1alpha1_TrainingJobSpec(in, out, s)
}

// Convert_v1alpha1_RunPolicy_To_v1beta1_RunPolicy folds suspend into execution.
func Convert_v1alpha1_RunPolicy_To_v1beta1_RunPolicy(in *RunPolicy, out *v1beta1.RunPolicy, s apiconversion.Scope) error {
	if err := autoConvert_v1alpha1_RunPolicy_To_v1beta1_RunPolicy(in, out, s); err != nil {
		return err
	}
	if ptr.Deref(in.Suspend, false) && (in.Execution == "" || in.Execution == ExecutionStart) {
		out.Execution = v1beta1.ExecutionSuspend
	}
	return nil
}

// Convert_v1beta1_RunPolicy_To_v1alpha1_RunPolicy splits execution Suspend
// into Start and suspend.
func Convert_v1beta1_RunPolicy_To_v1alpha1_RunPolicy(in *v1beta1.RunPolicy, out *RunPolicy, s apiconversion.Scope) error {
	if err := autoConvert_v1beta1_RunPolicy_To_v1alpha1_RunPolicy(in, out, s); err != nil {
		return err
	}
	if in.Execution == v1beta1.ExecutionSuspend {
		out.Execution, out.Suspend = ExecutionStart, ptr.To(true)
	}
	return nil
}

// Convert_v1beta1_PaddleRuntime_To_v1alpha1_PaddleRuntime drops launcher;
// ConvertFrom keeps it.
func Convert_v1beta1_PaddleRuntime_To_v1alpha1_PaddleRuntime(in *v1beta1.PaddleRuntime, out *PaddleRuntime, s apiconversion.Scope) error {
	return autoConvert_v1beta1_PaddleRuntime_To_v1alpha1_PaddleRuntime(in, out, s)
}

// Convert_v1alpha1_Runtime_To_v1beta1_Runtime converts volcano to volcanoJob.
func Convert_v1alpha1_Runtime_To_v1beta1_Runtime(in *Runtime, out *v1beta1.Runtime, s apiconversion.Scope) error {
	if in.Volcano != nil {
		out.VolcanoJob = &v1beta1.VolcanoJobRuntime{MountPath: in.Volcano.MountPath}
	}
	return autoConvert_v1alpha1_Runtime_To_v1beta1_Runtime(in, out, s)
}

// Convert_v1beta1_Runtime_To_v1alpha1_Runtime converts volcanoJob to volcano.
func Convert_v1beta1_Runtime_To_v1alpha1_Runtime(in *v1beta1.Runtime, out *Runtime, s apiconversion.Scope) error {
	if in.VolcanoJob != nil {
		out.Volcano = &VolcanoRuntime{MountPath: in.VolcanoJob.MountPath}
	}
	return autoConvert_v1beta1_Runtime_To_v1alpha1_Runtime(in, out, s)
}

// Convert_v1alpha1_Scheduling_To_v1beta1_Scheduling converts queue to volcanoQueue.
func Convert_v1alpha1_Scheduling_To_v1beta1_Scheduling(in *Scheduling, out *v1beta1.Scheduling, s apiconversion.Scope) error {
	out.VolcanoQueue = in.Queue
	return autoConvert_v1alpha1_Scheduling_To_v1beta1_Scheduling(in, out, s)
}

// Convert_v1beta1_Scheduling_To_v1alpha1_Scheduling converts volcanoQueue
// to queue; topology is dropped, and ConvertFrom keeps it.
func Convert_v1beta1_Scheduling_To_v1alpha1_Scheduling(in *v1beta1.Scheduling, out *Scheduling, s apiconversion.Scope) error {
	out.Queue = in.VolcanoQueue
	return autoConvert_v1beta1_Scheduling_To_v1alpha1_Scheduling(in, out, s)
}

// Convert_v1alpha1_SchedulingStatus_To_v1beta1_SchedulingStatus converts queue to localQueue.
func Convert_v1alpha1_SchedulingStatus_To_v1beta1_SchedulingStatus(in *SchedulingStatus, out *v1beta1.SchedulingStatus, s apiconversion.Scope) error {
	out.LocalQueue = in.Queue
	return autoConvert_v1alpha1_SchedulingStatus_To_v1beta1_SchedulingStatus(in, out, s)
}

// Convert_v1beta1_SchedulingStatus_To_v1alpha1_SchedulingStatus converts localQueue to queue.
func Convert_v1beta1_SchedulingStatus_To_v1alpha1_SchedulingStatus(in *v1beta1.SchedulingStatus, out *SchedulingStatus, s apiconversion.Scope) error {
	out.Queue = in.LocalQueue
	return autoConvert_v1beta1_SchedulingStatus_To_v1alpha1_SchedulingStatus(in, out, s)
}

// not is the negation of an optional boolean; unset stays unset.
func not(b *bool) *bool {
	if b == nil {
		return nil
	}
	return ptr.To(!*b)
}
