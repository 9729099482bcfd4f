package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/muster-dev/muster/api/v1beta1"
)

// filler fills jobs of either version at random, from data (a fuzzer's
// input) or a seed. Pod templates get only labels: the conversion copies
// them whole, and filling every field of a pod costs most of the time. A
// list is unset or has elements, never empty: JSON, and so the API server,
// does not tell an empty list from none, and neither does a value an
// annotation keeps.
func filler(f *randfill.Filler) *randfill.Filler {
	scheme := runtime.NewScheme()
	codecs := serializer.NewCodecFactory(scheme)
	return f.NilChance(0.3).NumElements(1, 3).MaxDepth(12).Funcs(metafuzzer.Funcs(codecs)...).Funcs(
		func(t *corev1.PodTemplateSpec, c randfill.Continue) { c.Fill(&t.Labels) },
		// Enumerations take their values, or none, so that every mapping
		// between them is tried.
		func(v *FailureAction, c randfill.Continue) {
			*v = pick(c, ActionRestartTask, ActionRestartRole, ActionRestartJob, ActionFailTask, ActionFailJob, ActionTerminateJob, ActionCompleteJob, ActionSuspendJob)
		},
		func(v *v1beta1.FailureAction, c randfill.Continue) {
			*v = pick(c, v1beta1.ActionRestartTask, v1beta1.ActionRestartRole, v1beta1.ActionRestartJob, v1beta1.ActionRestartJobAndIgnoreBackoffLimit, v1beta1.ActionFailTask, v1beta1.ActionFailJob, v1beta1.ActionCompleteJob, v1beta1.ActionSuspendJob)
		},
		func(v *RetryOn, c randfill.Continue) { *v = pick(c, RetryOnFailure, RetryAlways) },
		func(v *v1beta1.RetryOn, c randfill.Continue) {
			*v = pick(c, v1beta1.RetryNever, v1beta1.RetryOnTransientFailure, v1beta1.RetryOnFailure, v1beta1.RetryAlways)
		},
		func(v *Execution, c randfill.Continue) { *v = pick(c, ExecutionCreate, ExecutionStart, ExecutionStop) },
		func(v *v1beta1.Execution, c randfill.Continue) {
			*v = pick(c, v1beta1.ExecutionCreate, v1beta1.ExecutionStart, v1beta1.ExecutionSuspend, v1beta1.ExecutionStop)
		},
		func(v *v1beta1.RestartScope, c randfill.Continue) {
			*v = pick(c, v1beta1.RestartScopeTask, v1beta1.RestartScopeJob)
		},
		func(v *GangBackend, c randfill.Continue) { *v = pick(c, GangNone, GangNative, GangVolcano) },
		func(v *v1beta1.GangBackend, c randfill.Continue) {
			*v = pick(c, v1beta1.GangNone, v1beta1.GangNative, v1beta1.GangVolcano)
		},
		// The two annotations are the conversion's own.
		func(m *map[string]string, c randfill.Continue) {
			c.FillNoCustom(m)
			delete(*m, AnnotationV1alpha1Fields)
			delete(*m, AnnotationV1beta1Fields)
		},
	)
}

// pick is one of values, or now and then none or a value of no meaning.
func pick[T ~string](c randfill.Continue, values ...T) T {
	switch n := c.Intn(len(values) + 2); n {
	case len(values):
		return ""
	case len(values) + 1:
		return T(c.String(8))
	default:
		return values[n]
	}
}

// roundTrips checks that a v1alpha1 job converts to v1beta1 and back
// unchanged, and a v1beta1 job to v1alpha1 and back.
func roundTrips(t *testing.T, f *randfill.Filler) {
	t.Helper()
	var alpha TrainingJob
	f.Fill(&alpha)
	var beta v1beta1.TrainingJob
	if err := alpha.DeepCopy().ConvertTo(&beta); err != nil {
		t.Fatal(err)
	}
	var back TrainingJob
	if err := back.ConvertFrom(&beta); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(&alpha, &back) {
		t.Fatalf("v1alpha1 -> v1beta1 -> v1alpha1 changed the job (-before +after):\n%s", cmp.Diff(&alpha, &back))
	}

	var hub v1beta1.TrainingJob
	f.Fill(&hub)
	var spoke TrainingJob
	if err := spoke.ConvertFrom(hub.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	var again v1beta1.TrainingJob
	if err := spoke.ConvertTo(&again); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(&hub, &again) {
		t.Fatalf("v1beta1 -> v1alpha1 -> v1beta1 changed the job (-before +after):\n%s", cmp.Diff(&hub, &again))
	}
}

func TestRoundTrip(t *testing.T) {
	for seed := range int64(500) {
		roundTrips(t, filler(randfill.NewWithSeed(seed)))
	}
}

// FuzzRoundTrip is TestRoundTrip with the fuzzer choosing the jobs.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("a TrainingJob"))
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrips(t, filler(randfill.NewFromGoFuzz(data)))
	})
}

// The conversions that change a value, one by one: what a v1alpha1 job
// means is what the v1beta1 job it becomes means.
func TestConvertTo(t *testing.T) {
	job := func(edit func(*TrainingJob)) *TrainingJob {
		j := &TrainingJob{Spec: TrainingJobSpec{Roles: []Role{{Name: "worker"}}}}
		edit(j)
		return j
	}
	cases := map[string]struct {
		in    *TrainingJob
		check func(*v1beta1.TrainingJob) bool
	}{
		"suspend is execution Suspend": {
			job(func(j *TrainingJob) { j.Spec.Run.Suspend = ptr.To(true) }),
			func(b *v1beta1.TrainingJob) bool { return b.Spec.Run.Execution == v1beta1.ExecutionSuspend },
		},
		"a job created held stays held": {
			job(func(j *TrainingJob) { j.Spec.Run.Execution, j.Spec.Run.Suspend = ExecutionCreate, ptr.To(true) }),
			func(b *v1beta1.TrainingJob) bool { return b.Spec.Run.Execution == v1beta1.ExecutionCreate },
		},
		"TerminateJob is FailJob": {
			job(func(j *TrainingJob) { j.Spec.FailurePolicy.Rules = []FailureRule{{Action: ActionTerminateJob}} }),
			func(b *v1beta1.TrainingJob) bool {
				return b.Spec.FailurePolicy.Rules[0].Action == v1beta1.ActionFailJob
			},
		},
		"retry without maxRetries retries transient failures only": {
			job(func(j *TrainingJob) { j.Spec.FailurePolicy.Retry = &RetryPolicy{} }),
			func(b *v1beta1.TrainingJob) bool {
				return b.Spec.FailurePolicy.Retry.Policy == v1beta1.RetryOnTransientFailure
			},
		},
		"retry with maxRetries retries failures": {
			job(func(j *TrainingJob) { j.Spec.FailurePolicy.Retry = &RetryPolicy{MaxRetries: ptr.To[int32](2)} }),
			func(b *v1beta1.TrainingJob) bool { return b.Spec.FailurePolicy.Retry.Policy == v1beta1.RetryOnFailure },
		},
		"disabled is not enabled": {
			job(func(j *TrainingJob) { j.Spec.FailurePolicy.Classification = &Classification{Disabled: ptr.To(true)} }),
			func(b *v1beta1.TrainingJob) bool { return !*b.Spec.FailurePolicy.Classification.Enabled },
		},
		"a generic job restarts a task alone": {
			job(func(*TrainingJob) {}),
			func(b *v1beta1.TrainingJob) bool { return b.Spec.Roles[0].RestartScope == v1beta1.RestartScopeTask },
		},
		"a static PyTorch job restarts whole": {
			job(func(j *TrainingJob) { j.Spec.Runtime = &Runtime{PyTorch: &PyTorchRuntime{}} }),
			func(b *v1beta1.TrainingJob) bool { return b.Spec.Roles[0].RestartScope == v1beta1.RestartScopeJob },
		},
		"an elastic role restarts its task": {
			job(func(j *TrainingJob) {
				j.Spec.Runtime = &Runtime{PyTorch: &PyTorchRuntime{Elastic: &ElasticPolicy{}}}
				j.Spec.Scaling.Roles = []ScalingRole{{Name: "worker"}}
			}),
			func(b *v1beta1.TrainingJob) bool { return b.Spec.Roles[0].RestartScope == v1beta1.RestartScopeTask },
		},
		"a gang-scheduled job restarts whole": {
			job(func(j *TrainingJob) { j.Status.Scheduling = &SchedulingStatus{Backend: GangNative} }),
			func(b *v1beta1.TrainingJob) bool { return b.Spec.Roles[0].RestartScope == v1beta1.RestartScopeJob },
		},
		"a Volcano Job's rules decide, not a gang": {
			job(func(j *TrainingJob) {
				j.Spec.Runtime = &Runtime{Volcano: &VolcanoRuntime{MountPath: "/etc/volcano"}}
				j.Spec.Scheduling.Queue = "q"
			}),
			func(b *v1beta1.TrainingJob) bool {
				return b.Spec.Roles[0].RestartScope == v1beta1.RestartScopeTask &&
					b.Spec.Runtime.VolcanoJob.MountPath == "/etc/volcano" && b.Spec.Scheduling.VolcanoQueue == "q"
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out v1beta1.TrainingJob
			if err := tc.in.ConvertTo(&out); err != nil {
				t.Fatal(err)
			}
			if !tc.check(&out) {
				t.Errorf("converted to %+v", out.Spec)
			}
		})
	}
}

// A change made through v1beta1 wins over what a v1alpha1 annotation kept:
// the kept value comes back only while the value it became is unchanged.
func TestKeptValuesYieldToChanges(t *testing.T) {
	in := &TrainingJob{Spec: TrainingJobSpec{
		Roles:         []Role{{Name: "worker"}},
		FailurePolicy: FailurePolicy{Retry: &RetryPolicy{MaxRetries: ptr.To[int32](2)}},
	}}
	var beta v1beta1.TrainingJob
	if err := in.ConvertTo(&beta); err != nil {
		t.Fatal(err)
	}
	if beta.Annotations[AnnotationV1alpha1Fields] == "" {
		t.Fatal("maxRetries is kept for the way back")
	}
	beta.Spec.FailurePolicy.Retry.Policy = v1beta1.RetryAlways
	var back TrainingJob
	if err := back.ConvertFrom(&beta); err != nil {
		t.Fatal(err)
	}
	if got := back.Spec.FailurePolicy.Retry; got.Policy != RetryAlways || got.MaxRetries != nil {
		t.Errorf("the change to Always is what v1alpha1 sees, got %+v", got)
	}
}

// The conversions that change a value on the way to v1alpha1: a client of
// v1alpha1 reads what the v1beta1 job means.
func TestConvertFrom(t *testing.T) {
	job := func(edit func(*v1beta1.TrainingJob)) *v1beta1.TrainingJob {
		j := &v1beta1.TrainingJob{Spec: v1beta1.TrainingJobSpec{Roles: []v1beta1.Role{{Name: "worker", RestartScope: v1beta1.RestartScopeTask}}}}
		edit(j)
		return j
	}
	cases := map[string]struct {
		in    *v1beta1.TrainingJob
		check func(*TrainingJob) bool
	}{
		"OnFailure retries while the budget lasts": {
			job(func(j *v1beta1.TrainingJob) {
				j.Spec.FailurePolicy.BackoffLimit = ptr.To[int32](7)
				j.Spec.FailurePolicy.Retry = &v1beta1.RetryPolicy{Policy: v1beta1.RetryOnFailure}
			}),
			func(a *TrainingJob) bool {
				r := a.Spec.FailurePolicy.Retry
				return r.Policy == RetryOnFailure && ptr.Deref(r.MaxRetries, 0) == 7
			},
		},
		"OnTransientFailure has no counted retries": {
			job(func(j *v1beta1.TrainingJob) {
				j.Spec.FailurePolicy.Retry = &v1beta1.RetryPolicy{Policy: v1beta1.RetryOnTransientFailure}
			}),
			func(a *TrainingJob) bool {
				r := a.Spec.FailurePolicy.Retry
				return r.Policy == RetryOnFailure && ptr.Deref(r.MaxRetries, 0) == 0
			},
		},
		"Never is no retry": {
			job(func(j *v1beta1.TrainingJob) {
				j.Spec.FailurePolicy.Retry = &v1beta1.RetryPolicy{Policy: v1beta1.RetryNever}
			}),
			func(a *TrainingJob) bool { return a.Spec.FailurePolicy.Retry == nil },
		},
		"FailJob is final: TerminateJob": {
			job(func(j *v1beta1.TrainingJob) {
				j.Spec.FailurePolicy.Rules = []v1beta1.FailureRule{{Action: v1beta1.ActionFailJob}, {Action: v1beta1.ActionRestartJobAndIgnoreBackoffLimit}}
			}),
			func(a *TrainingJob) bool {
				r := a.Spec.FailurePolicy.Rules
				return r[0].Action == ActionTerminateJob && r[1].Action == ActionRestartJob
			},
		},
		"Suspend is suspend": {
			job(func(j *v1beta1.TrainingJob) { j.Spec.Run.Execution = v1beta1.ExecutionSuspend }),
			func(a *TrainingJob) bool {
				return a.Spec.Run.Execution == ExecutionStart && ptr.Deref(a.Spec.Run.Suspend, false)
			},
		},
		"run init containers": {
			job(func(j *v1beta1.TrainingJob) {
				j.Spec.Run.Debug = &v1beta1.DebugPolicy{RunInitContainers: ptr.To(false)}
			}),
			func(a *TrainingJob) bool { return *a.Spec.Run.Debug.SkipInitContainers },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out TrainingJob
			if err := out.ConvertFrom(tc.in); err != nil {
				t.Fatal(err)
			}
			if !tc.check(&out) {
				t.Errorf("converted to %+v", out.Spec.FailurePolicy)
			}
		})
	}
}

// Status is never read from the annotation: anyone who may update a job
// through v1alpha1 writes its annotations, and the API server copies status
// from the old object only in the request's version, so status an
// annotation carried would be status set without the status subresource
// (an sshSecretName of the writer's own Secret, whose key the job's pods
// would then trust).
func TestStatusNotFromAnnotation(t *testing.T) {
	forged := &TrainingJob{Spec: TrainingJobSpec{Roles: []Role{{Name: "worker"}}}}
	forged.Annotations = map[string]string{AnnotationV1beta1Fields: `{` +
		`"mpi":{"sshSecretName":"attacker-ssh"},` +
		`"progressStatus":{"reporter":"attacker","step":7},` +
		`"podRestarts":[{"inPlace":3,"recreated":1,"message":"forged"}]}`}
	forged.Status.Attempts = []AttemptStatus{{ID: 0}}
	var beta v1beta1.TrainingJob
	if err := forged.ConvertTo(&beta); err != nil {
		t.Fatal(err)
	}
	if beta.Status.MPI != (v1beta1.MPIStatus{}) {
		t.Errorf("status.mpi came from the annotation: %+v", beta.Status.MPI)
	}
	if beta.Status.Progress != nil {
		t.Errorf("status.progress came from the annotation: %+v", beta.Status.Progress)
	}
	if p := beta.Status.Attempts[0].PodRestarts; p != nil {
		t.Errorf("status.attempts[0].podRestarts came from the annotation: %+v", p)
	}
}

// A write of the main resource through v1alpha1 keeps status: the API
// server takes it from the old object in v1alpha1 terms, which holds
// status.mpi, status.progress and status.attempts[].podRestarts natively,
// whatever the writer does to the annotation.
func TestMainResourceWriteKeepsStatus(t *testing.T) {
	stored := &v1beta1.TrainingJob{Spec: v1beta1.TrainingJobSpec{Roles: []v1beta1.Role{{Name: "worker", RestartScope: v1beta1.RestartScopeTask}}}}
	stored.Status.MPI = v1beta1.MPIStatus{SSHSecretName: "j-ssh-x7k2p"}
	stored.Status.Progress = &v1beta1.ProgressStatus{Step: ptr.To[int64](42), Reporter: "j-worker-0",
		Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: "0.5"}}}
	stored.Status.Attempts = []v1beta1.AttemptStatus{{ID: 0, PodRestarts: &v1beta1.PodRestarts{InPlace: 3, Recreated: 1, Message: "j-worker-2"}}, {ID: 1}}
	var old TrainingJob
	if err := old.ConvertFrom(stored.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if old.Status.MPI.SSHSecretName != "j-ssh-x7k2p" || old.Status.Progress == nil || old.Status.Attempts[0].PodRestarts == nil {
		t.Fatalf("v1alpha1 reads the status natively, got %+v", old.Status)
	}
	for name, annotation := range map[string]*string{
		"annotation kept":    ptr.To(old.Annotations[AnnotationV1beta1Fields]),
		"annotation dropped": nil,
		"annotation forged":  ptr.To(`{"mpi":{"sshSecretName":"attacker-ssh"},"progressStatus":{"reporter":"attacker"},"podRestarts":[null,{"inPlace":9}]}`),
	} {
		t.Run(name, func(t *testing.T) {
			write := old.DeepCopy()
			write.Spec.Run.RestartRequest = "edit"
			delete(write.Annotations, AnnotationV1beta1Fields)
			if annotation != nil {
				if write.Annotations == nil {
					write.Annotations = map[string]string{}
				}
				write.Annotations[AnnotationV1beta1Fields] = *annotation
			}
			var got v1beta1.TrainingJob
			if err := write.ConvertTo(&got); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(got.Status, stored.Status) {
				t.Errorf("status changed (-stored +got):\n%s", cmp.Diff(stored.Status, got.Status))
			}
		})
	}
}
