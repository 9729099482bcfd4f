package webhook

import (
	"math"
	"math/rand/v2"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// fuzzText is the free text a fuzzed job carries: names and regular
// expressions the fuzzer mutates as strings.
type fuzzText struct {
	name, role, regex string
}

// pick is one of xs.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// edgy makes wild choices: counts at or past the API's bounds, values the
// schema refuses. Most jobs are made tame, with a few wild fields, so that
// many pass the schema and CEL and reach the webhook and the planner.
type edgy struct {
	r    *rand.Rand
	wild int // a choice is wild one time in wild
}

// wildOne reports whether this choice is wild.
func (e edgy) wildOne() bool { return e.r.IntN(e.wild) == 0 }

// count is a small valid count, or one at or around the API's bounds.
func (e edgy) count() int32 {
	if !e.wildOne() {
		return 1 + e.r.Int32N(4)
	}
	return pick[int32](e.r, 0, 1, 16, 40, 56, 10000, 10001, 20000, -1, math.MaxInt32, math.MinInt32)
}

// fuzzCount is a count for which r decides how wild it is.
func fuzzCount(r *rand.Rand) int32 { return edgy{r: r, wild: 8}.count() }

// fuzzJob is a job whose every choice r makes, near enough to valid that
// many pass the schema and CEL, and with the fuzzer's text in the names
// and expressions.
func fuzzJob(r *rand.Rand, text fuzzText) *musterv1.TrainingJob {
	job := &musterv1.TrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: musterv1.GroupVersion.String(), Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: pick(r, "job", "job", text.name, text.name, "a-long-job-name-that-leaves-little-room-for-roles"), Namespace: "ns"},
	}
	// Roles have distinct names, but for a wild choice now and then, and
	// fields that name a role mostly name one of them.
	all := []string{"master", "worker", "launcher", "trainer", "pserver", text.role}
	var names []string
	spec := &job.Spec
	for _, i := range r.Perm(len(all))[:1+r.IntN(4)] {
		name := all[i]
		if r.IntN(16) == 0 {
			name = pick(r, all...)
		}
		names = append(names, name)
		role := musterv1.Role{
			Name:          name,
			RestartPolicy: pick(r, musterv1.RestartPolicyExitCode, musterv1.RestartPolicyNever, musterv1.RestartPolicyOnFailure, musterv1.RestartPolicyAlways, ""),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "busybox", Args: []string{"{{MUSTER_POD_NAME}}"}}},
			}},
		}
		if r.IntN(3) > 0 {
			role.Replicas = new(fuzzCount(r))
		}
		if r.IntN(4) == 0 {
			role.DependsOn = []musterv1.Dependency{{Role: pickName(r, names, all), When: pick(r, musterv1.DependencyCondition("Running"), "Succeeded", "")}}
		}
		if r.IntN(6) == 0 {
			role.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}
		spec.Roles = append(spec.Roles, role)
	}
	fuzzScaling(r, spec, names, all, text)
	fuzzRuntime(r, spec)
	fuzzFailurePolicy(r, spec, names, all, text)
	if r.IntN(4) == 0 {
		spec.Scheduling = musterv1.Scheduling{Backend: pick(r, musterv1.GangNative, musterv1.GangCoscheduling, musterv1.GangVolcano, musterv1.GangNone, "Other"),
			MinAvailable: fuzzCount(r)}
		if spec.Scheduling.Backend == musterv1.GangNone {
			spec.Scheduling.MinAvailable = 0
		}
	}
	if r.IntN(4) == 0 {
		spec.Run.Execution = []musterv1.Execution{musterv1.ExecutionStart, musterv1.ExecutionSuspend}[r.IntN(2)]
	}
	return job
}

// pickName is mostly one of names, now and then any of all.
func pickName(r *rand.Rand, names, all []string) string {
	if r.IntN(8) == 0 {
		return pick(r, all...)
	}
	return pick(r, names...)
}

func fuzzRuntime(r *rand.Rand, spec *musterv1.TrainingJobSpec) {
	switch r.IntN(6) {
	case 1:
		spec.Runtime = &musterv1.Runtime{PyTorch: &musterv1.PyTorchRuntime{MasterRole: pick(r, "", spec.Roles[0].Name, "master")}}
		if r.IntN(2) == 0 && len(spec.Scaling.Roles) > 0 {
			spec.Runtime.PyTorch.Elastic = &musterv1.ElasticPolicy{}
		}
	case 2:
		spec.Runtime = &musterv1.Runtime{MPI: &musterv1.MPIRuntime{SlotsPerWorker: fuzzCount(r)}}
	case 3:
		spec.Runtime = &musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{}}
	case 4:
		spec.Runtime = &musterv1.Runtime{JAX: &musterv1.JAXRuntime{}}
	}
}

func fuzzScaling(r *rand.Rand, spec *musterv1.TrainingJobSpec, names, all []string, text fuzzText) {
	if r.IntN(3) > 0 {
		return
	}
	sc := &spec.Scaling
	total := int32(0)
	for range 1 + r.IntN(2) {
		sr := musterv1.ScalingRole{Name: pickName(r, names, all), MaxReplicas: fuzzCount(r)}
		if r.IntN(2) == 0 {
			sr.MinReplicas = new(min(fuzzCount(r), sr.MaxReplicas))
		}
		sc.Roles = append(sc.Roles, sr)
		total += sr.MaxReplicas
	}
	sc.Replicas = new(total)
	if r.IntN(8) == 0 {
		sc.Replicas = new(fuzzCount(r))
	}
	// A scalable role leaves its replicas to spec.scaling.
	for i := range spec.Roles {
		for _, sr := range sc.Roles {
			if spec.Roles[i].Name == sr.Name && r.IntN(8) > 0 {
				spec.Roles[i].Replicas = nil
			}
		}
	}
	if r.IntN(2) == 0 {
		sc.Autoscaling.Metric.LogRegex = text.regex
	}
}

func fuzzFailurePolicy(r *rand.Rand, spec *musterv1.TrainingJobSpec, names, all []string, text fuzzText) {
	fp := &spec.FailurePolicy
	if r.IntN(2) == 0 {
		fp.BackoffLimit = new(fuzzCount(r))
	}
	for range r.IntN(3) {
		rule := musterv1.FailureRule{
			Action: pick(r, musterv1.ActionRestartTask, musterv1.ActionRestartRole, musterv1.ActionRestartJob, musterv1.ActionFailTask,
				musterv1.ActionFailJob, musterv1.ActionFailJob, musterv1.ActionCompleteJob, musterv1.ActionSuspendJob),
		}
		if r.IntN(2) == 0 {
			rule.Roles = []string{pickName(r, names, all)}
		}
		if r.IntN(2) == 0 {
			rule.OnEvents = []musterv1.FailureEvent{pick(r, musterv1.EventPodFailed, musterv1.EventPodEvicted, musterv1.EventPodPending,
				musterv1.EventTaskCompleted, musterv1.EventTaskFailed, musterv1.EventPartlyPlaced)}
		}
		if r.IntN(2) == 0 {
			rule.OnExitCodes = musterv1.ExitCodeMatch{Operator: pick(r, musterv1.ExitCodeIn, musterv1.ExitCodeNotIn), Values: []int32{pick[int32](r, 1, 137, 1, 137, 0, 256)}}
		}
		if r.IntN(3) == 0 {
			rule.OnClasses = []musterv1.FailureClass{pick(r, musterv1.ClassTransient, musterv1.ClassPermanent, musterv1.ClassUnknown)}
		}
		if slices.Contains(rule.OnEvents, musterv1.EventPodPending) || r.IntN(8) == 0 {
			rule.TimeoutSeconds = fuzzCount(r)
		}
		fp.Rules = append(fp.Rules, rule)
	}
	if r.IntN(3) == 0 {
		fp.Classification = &musterv1.Classification{Rules: []musterv1.ClassificationRule{{
			ContainerMessage: text.regex, PodReason: pick(r, "", text.regex),
			Code: pick[int32](r, 300, 301, 1, 200, -5), Phrase: pick(r, "Custom", "Custom", ""),
			Class:     pick(r, musterv1.ClassTransient, musterv1.ClassPermanent, musterv1.ClassUnknown, ""),
			ExitCodes: musterv1.CodeRange{Min: 1 + r.Int32N(3), Max: pick[int32](r, 3, 255, 0, 300)},
		}}}
	}
}
