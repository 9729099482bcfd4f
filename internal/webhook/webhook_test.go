package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "github.com/muster-dev/muster/api/v1alpha1"
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func newScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := musterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func request(t *testing.T, op admissionv1.Operation, job, old *musterv1.TrainingJob) admission.Request {
	raw := func(j *musterv1.TrainingJob) runtime.RawExtension {
		if j == nil {
			return runtime.RawExtension{}
		}
		j = j.DeepCopy()
		j.APIVersion, j.Kind = musterv1.GroupVersion.String(), "TrainingJob"
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "1",
		Operation: op,
		Kind:      metav1.GroupVersionKind{Group: "muster.dev", Version: "v1alpha1", Kind: "TrainingJob"},
		Name:      job.Name,
		Namespace: job.Namespace,
		Object:    raw(job),
		OldObject: raw(old),
	}}
}

// Field errors become the API server's own kind of denial: 422 Invalid,
// with the field path in the message and in the causes.
func TestFieldErrorsDenyWithTheField(t *testing.T) {
	g := gomega.NewWithT(t)
	path := field.NewPath("spec", "failurePolicy", "rules").Index(0).Child("containerMessage")
	h := newTrainingJobWebhook()
	h.validateCreate = func(*musterv1.TrainingJob) field.ErrorList {
		return field.ErrorList{field.Invalid(path, "(", "missing closing )")}
	}
	hook := admission.WithValidator(newScheme(t), h)
	job := testutil.MakeJob("j", "ns").Role("w", 1).Obj()

	resp := hook.Handle(context.Background(), request(t, admissionv1.Create, job, nil))
	g.Expect(resp.Allowed).To(gomega.BeFalse())
	g.Expect(resp.Result.Code).To(gomega.Equal(int32(http.StatusUnprocessableEntity)))
	g.Expect(resp.Result.Reason).To(gomega.Equal(metav1.StatusReasonInvalid))
	g.Expect(resp.Result.Message).To(gomega.ContainSubstring(`TrainingJob.muster.dev "j" is invalid: spec.failurePolicy.rules[0].containerMessage`))
	g.Expect(resp.Result.Details.Causes).To(gomega.ConsistOf(gomega.HaveField("Field", path.String())))
}

func TestUpdatesAreValidatedAgainstTheOldJob(t *testing.T) {
	g := gomega.NewWithT(t)
	h := newTrainingJobWebhook()
	var gotOld, gotNew int32
	h.validateUpdate = func(oldJob, job *musterv1.TrainingJob) field.ErrorList {
		gotOld, gotNew = *oldJob.Spec.Roles[0].Replicas, *job.Spec.Roles[0].Replicas
		return nil
	}
	hook := admission.WithValidator(newScheme(t), h)
	old := testutil.MakeJob("j", "ns").Role("w", 1).Obj()
	job := testutil.MakeJob("j", "ns").Role("w", 3).Obj()

	resp := hook.Handle(context.Background(), request(t, admissionv1.Update, job, old))
	g.Expect(resp.Allowed).To(gomega.BeTrue(), "%+v", resp.Result)
	g.Expect([]int32{gotOld, gotNew}).To(gomega.Equal([]int32{1, 3}))
}

// The real rules accept a plain job.
func TestValidJobIsAllowed(t *testing.T) {
	g := gomega.NewWithT(t)
	hook := admission.WithValidator(newScheme(t), newTrainingJobWebhook())
	resp := hook.Handle(context.Background(), request(t, admissionv1.Create, testutil.MakeJob("j", "ns").Role("w", 1).Obj(), nil))
	g.Expect(resp.Allowed).To(gomega.BeTrue(), "%+v", resp.Result)
}

// What Default sets comes back as a JSON patch.
func TestDefaultsArePatched(t *testing.T) {
	g := gomega.NewWithT(t)
	h := newTrainingJobWebhook()
	h.defaultJob = func(job *musterv1.TrainingJob) { job.Spec.Roles[0].Replicas = new(int32(2)) }
	hook := admission.WithDefaulter(newScheme(t), h)

	resp := hook.Handle(context.Background(), request(t, admissionv1.Create, testutil.MakeJob("j", "ns").Role("w", 1).Obj(), nil))
	g.Expect(resp.Allowed).To(gomega.BeTrue(), "%+v", resp.Result)
	g.Expect(resp.Patches).To(gomega.ConsistOf(gomega.And(
		gomega.HaveField("Operation", "replace"),
		gomega.HaveField("Path", "/spec/roles/0/replicas"),
		gomega.HaveField("Value", gomega.BeNumerically("==", 2)),
	)))
}

// No configuration calls the defaulter any more; one an earlier version
// installed still gets an answer, which allows the job and changes nothing.
func TestLeftoverMutatingConfigurationChangesNothing(t *testing.T) {
	g := gomega.NewWithT(t)
	hook := admission.WithDefaulter(newScheme(t), newTrainingJobWebhook())
	resp := hook.Handle(context.Background(), request(t, admissionv1.Create, testutil.MakeJob("j", "ns").Role("w", 1).Obj(), nil))
	g.Expect(resp.Allowed).To(gomega.BeTrue(), "%+v", resp.Result)
	g.Expect(resp.Patches).To(gomega.BeEmpty())
}

// A job may name only a gang backend the operator drives; None always.
func TestGangBackendMustBeEnabled(t *testing.T) {
	g := gomega.NewWithT(t)
	h := newTrainingJobWebhook()
	h.gangBackends = []musterv1.GangBackend{musterv1.GangNative}
	job := testutil.MakeJob("j", "ns").Role("w", 2).WithDefaults().Obj()
	for backend, ok := range map[musterv1.GangBackend]bool{"": true, musterv1.GangNone: true, musterv1.GangNative: true, musterv1.GangVolcano: false} {
		job.Spec.Scheduling.Backend = backend
		_, err := h.ValidateCreate(context.Background(), job)
		if ok {
			g.Expect(err).NotTo(gomega.HaveOccurred(), "backend %q", backend)
			continue
		}
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("spec.scheduling.backend")), "backend %q", backend)
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`supported values: "None", "Native"`)))
	}
}

// An earlier version's configuration sends v1alpha1 jobs to the v1alpha1
// path while an upgrade replaces it: they are validated as the v1beta1 jobs
// they become, so an invalid one is refused and a valid one allowed.
func TestV1alpha1PathValidatesTheConvertedJob(t *testing.T) {
	g := gomega.NewWithT(t)
	s := newScheme(t)
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	hook := admission.WithValidator[*v1alpha1.TrainingJob](s, v1alpha1Webhook{newTrainingJobWebhook()})
	req := func(job *v1alpha1.TrainingJob) admission.Request {
		job.APIVersion, job.Kind = v1alpha1.GroupVersion.String(), "TrainingJob"
		b, err := json.Marshal(job)
		if err != nil {
			t.Fatal(err)
		}
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create,
			Kind: metav1.GroupVersionKind{Group: "muster.dev", Version: "v1alpha1", Kind: "TrainingJob"},
			Name: job.Name, Namespace: job.Namespace, Object: runtime.RawExtension{Raw: b}}}
	}
	role := func(name string, dependsOn ...v1alpha1.Dependency) v1alpha1.Role {
		return v1alpha1.Role{Name: name, DependsOn: dependsOn, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}
	}
	invalid := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: v1alpha1.TrainingJobSpec{Roles: []v1alpha1.Role{role("first", v1alpha1.Dependency{Role: "second"}), role("second")}}}
	resp := hook.Handle(context.Background(), req(invalid))
	g.Expect(resp.Allowed).To(gomega.BeFalse())
	g.Expect(resp.Result.Message).To(gomega.ContainSubstring("spec.roles[0].dependsOn[0].role"))

	valid := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: v1alpha1.TrainingJobSpec{Roles: []v1alpha1.Role{role("first")}}}
	g.Expect(hook.Handle(context.Background(), req(valid)).Allowed).To(gomega.BeTrue())
}

// An elastic role that would restart the whole job on a lost worker is
// allowed, with a warning that says how to restart the worker alone.
func TestElasticRoleWithJobScopeIsWarnedOf(t *testing.T) {
	g := gomega.NewWithT(t)
	hook := admission.WithValidator(newScheme(t), newTrainingJobWebhook())
	job := testutil.MakeJob("j", "ns").Role("worker", 2).Elastic(1, 4).RestartScope(musterv1.RestartScopeJob).Obj()
	resp := hook.Handle(context.Background(), request(t, admissionv1.Create, job, nil))
	g.Expect(resp.Allowed).To(gomega.BeTrue())
	g.Expect(resp.Warnings).To(gomega.ConsistOf(gomega.ContainSubstring("spec.roles[0].restartScope is Job")))

	task := testutil.MakeJob("j", "ns").Role("worker", 2).Elastic(1, 4).Obj()
	g.Expect(hook.Handle(context.Background(), request(t, admissionv1.Create, task, nil)).Warnings).To(gomega.BeEmpty())

	// An update is warned of what it brings, not of what the job had.
	resp = hook.Handle(context.Background(), request(t, admissionv1.Update, job, task))
	g.Expect(resp.Allowed).To(gomega.BeTrue())
	g.Expect(resp.Warnings).To(gomega.ConsistOf(gomega.ContainSubstring("spec.roles[0].restartScope is Job")))
	g.Expect(hook.Handle(context.Background(), request(t, admissionv1.Update, job, job)).Warnings).To(gomega.BeEmpty())
}
