// Package webhook serves the TrainingJob admission webhook: a validator
// that refuses a job the CRD's schema and CEL rules accept but the
// operator could not run. The checks themselves live in
// internal/validation; this package only turns their field errors into an
// admission answer, and keeps the serving certificate rotated (certs.go).
package webhook

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "github.com/muster-dev/muster/api/v1alpha1"
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/validation"
)

// The paths controller-runtime's builder serves the webhooks on, derived
// from the group, version and kind; config/webhook names the validating
// one, and the CRD the conversion. No configuration calls the mutating one
// any more (every default is the CRD schema's, applied by the API server
// without a call): the operator still answers it, changing nothing, for a
// configuration an earlier version installed, which would otherwise refuse
// every create until it is deleted. For the same reason the v1alpha1
// paths an earlier version's configuration calls are answered too, while
// an upgrade replaces it.
const (
	ValidatePath         = "/validate-muster-dev-v1beta1-trainingjob"
	MutatePath           = "/mutate-muster-dev-v1beta1-trainingjob"
	ConvertPath          = "/convert"
	ValidatePathV1alpha1 = "/validate-muster-dev-v1alpha1-trainingjob"
	MutatePathV1alpha1   = "/mutate-muster-dev-v1alpha1-trainingjob"
)

// Register adds the TrainingJob validator, the defaulter behind MutatePath
// and the conversion between v1alpha1 and v1beta1 (ConvertPath, which the
// builder serves because the scheme holds both versions, v1beta1 the hub)
// to mgr's webhook server. The operator binary and the integration tests
// both call it. gangBackends are the gang backends the operator drives: a
// new job that names another one is refused; defaultBackend is the one a
// job that names none gets.
func Register(mgr ctrl.Manager, defaultBackend musterv1.GangBackend, gangBackends ...musterv1.GangBackend) error {
	h := newTrainingJobWebhook()
	h.gangBackends, h.defaultBackend = gangBackends, defaultBackend
	err := ctrl.NewWebhookManagedBy(mgr, &musterv1.TrainingJob{}).
		WithDefaulter(h).
		WithValidator(h).
		Complete()
	if err != nil {
		return err
	}
	server := mgr.GetWebhookServer()
	server.Register(ValidatePathV1alpha1, admission.WithValidator[*v1alpha1.TrainingJob](mgr.GetScheme(), v1alpha1Webhook{h}))
	server.Register(MutatePathV1alpha1, admission.WithDefaulter[*v1alpha1.TrainingJob](mgr.GetScheme(), v1alpha1Webhook{h}))
	return nil
}

// v1alpha1Webhook answers an earlier version's configuration, which sends
// v1alpha1 objects: it validates them as the v1beta1 jobs they become.
type v1alpha1Webhook struct{ h *trainingJobWebhook }

func (w v1alpha1Webhook) Default(context.Context, *v1alpha1.TrainingJob) error { return nil }

func (w v1alpha1Webhook) ValidateCreate(ctx context.Context, job *v1alpha1.TrainingJob) (admission.Warnings, error) {
	hub, err := toHub(job)
	if err != nil {
		return nil, err
	}
	return w.h.ValidateCreate(ctx, hub)
}

func (w v1alpha1Webhook) ValidateUpdate(ctx context.Context, oldJob, job *v1alpha1.TrainingJob) (admission.Warnings, error) {
	oldHub, err := toHub(oldJob)
	if err != nil {
		return nil, err
	}
	hub, err := toHub(job)
	if err != nil {
		return nil, err
	}
	return w.h.ValidateUpdate(ctx, oldHub, hub)
}

func (w v1alpha1Webhook) ValidateDelete(context.Context, *v1alpha1.TrainingJob) (admission.Warnings, error) {
	return nil, nil
}

func toHub(job *v1alpha1.TrainingJob) (*musterv1.TrainingJob, error) {
	hub := &musterv1.TrainingJob{}
	return hub, job.ConvertTo(hub)
}

// trainingJobWebhook calls internal/validation. The functions are fields so
// the tests can check the admission answer for errors the real rules do
// not produce yet.
type trainingJobWebhook struct {
	defaultJob     func(job *musterv1.TrainingJob)
	validateCreate func(job *musterv1.TrainingJob) field.ErrorList
	validateUpdate func(oldJob, job *musterv1.TrainingJob) field.ErrorList
	gangBackends   []musterv1.GangBackend
	defaultBackend musterv1.GangBackend
}

func newTrainingJobWebhook() *trainingJobWebhook {
	return &trainingJobWebhook{
		defaultJob:     validation.Default,
		validateCreate: validation.ValidateCreate,
		validateUpdate: validation.ValidateUpdate,
	}
}

var (
	_ admission.Defaulter[*musterv1.TrainingJob] = &trainingJobWebhook{}
	_ admission.Validator[*musterv1.TrainingJob] = &trainingJobWebhook{}
)

// Default answers a mutating configuration an earlier version installed
// (see MutatePath).
func (h *trainingJobWebhook) Default(_ context.Context, job *musterv1.TrainingJob) error {
	h.defaultJob(job)
	return nil
}

// ValidateCreate refuses a new job that internal/validation rejects.
func (h *trainingJobWebhook) ValidateCreate(_ context.Context, job *musterv1.TrainingJob) (admission.Warnings, error) {
	errs := append(h.validateCreate(job), validation.Topology(job, gang.Resolve(job, h.defaultBackend))...)
	if b := job.Spec.Scheduling.Backend; b != "" && b != musterv1.GangNone && !slices.Contains(h.gangBackends, b) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "scheduling", "backend"), b,
			append([]string{string(musterv1.GangNone)}, gangNames(h.gangBackends)...)))
	}
	return scopeWarnings(job), invalid(job, errs)
}

// scopeWarnings warns of an elastic role whose restart scope restarts the
// whole job: allowed, but rarely meant, since its world survives a lost
// member and a whole-job restart throws that away.
func scopeWarnings(job *musterv1.TrainingJob) admission.Warnings {
	rt := job.Spec.Runtime
	if rt == nil || rt.PyTorch == nil || rt.PyTorch.Elastic == nil {
		return nil
	}
	var out admission.Warnings
	for i, r := range job.Spec.Roles {
		elastic := slices.ContainsFunc(job.Spec.Scaling.Roles, func(s musterv1.ScalingRole) bool { return s.Name == r.Name })
		if elastic && r.RestartScope != musterv1.RestartScopeTask {
			out = append(out, fmt.Sprintf("spec.roles[%d].restartScope is Job: a lost worker of elastic role %s restarts the whole job; restartScope: Task replaces it alone", i, r.Name))
		}
	}
	return out
}

func gangNames(bs []musterv1.GangBackend) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// ValidateUpdate refuses an update that internal/validation rejects.
func (h *trainingJobWebhook) ValidateUpdate(_ context.Context, oldJob, job *musterv1.TrainingJob) (admission.Warnings, error) {
	// Only what this update brings: a job created with the warning is not
	// warned of again on every scale or resume.
	var warnings admission.Warnings
	before := scopeWarnings(oldJob)
	for _, w := range scopeWarnings(job) {
		if !slices.Contains(before, w) {
			warnings = append(warnings, w)
		}
	}
	// A topology request depends on the labels and annotations too (the
	// Kueue queue): an update that makes an honoured request one nothing
	// honours is refused; one admitted under older rules stays updatable.
	errs := h.validateUpdate(oldJob, job)
	backend := gang.Resolve(job, h.defaultBackend)
	if len(validation.Topology(oldJob, backend)) == 0 {
		errs = append(errs, validation.Topology(job, backend)...)
	}
	return warnings, invalid(job, errs)
}

// ValidateDelete allows every delete: the webhook configuration does not
// even send them.
func (h *trainingJobWebhook) ValidateDelete(context.Context, *musterv1.TrainingJob) (admission.Warnings, error) {
	return nil, nil
}

// invalid is the error the API server itself returns for a schema or CEL
// violation (422 Invalid, one cause per field), so clients see webhook and
// built-in denials alike.
func invalid(job *musterv1.TrainingJob, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(musterv1.GroupVersion.WithKind("TrainingJob").GroupKind(), job.Name, errs)
}
