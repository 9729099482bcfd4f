// Package webhook serves the TrainingJob admission webhook: a validator
// that refuses a job the CRD's schema and CEL rules accept but the
// operator could not run. The checks themselves live in
// internal/validation; this package only turns their field errors into an
// admission answer, and keeps the serving certificate rotated (certs.go).
package webhook

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/validation"
)

// The paths controller-runtime's builder serves the webhooks on, derived
// from the group, version and kind; config/webhook names the validating
// one. No configuration calls the mutating one any more (every default is
// the CRD schema's, applied by the API server without a call): the
// operator still answers it, changing nothing, for a configuration an
// earlier version installed, which would otherwise refuse every create
// until it is deleted.
const (
	ValidatePath = "/validate-muster-dev-v1alpha1-trainingjob"
	MutatePath   = "/mutate-muster-dev-v1alpha1-trainingjob"
)

// Register adds the TrainingJob validator, and the defaulter behind
// MutatePath, to mgr's webhook server. The operator binary and the
// integration tests both call it.
// gangBackends are the gang backends the operator drives: a new job that
// names another one is refused.
func Register(mgr ctrl.Manager, gangBackends ...musterv1.GangBackend) error {
	h := newTrainingJobWebhook()
	h.gangBackends = gangBackends
	return ctrl.NewWebhookManagedBy(mgr, &musterv1.TrainingJob{}).
		WithDefaulter(h).
		WithValidator(h).
		Complete()
}

// trainingJobWebhook calls internal/validation. The functions are fields so
// the tests can check the admission answer for errors the real rules do
// not produce yet.
type trainingJobWebhook struct {
	defaultJob     func(job *musterv1.TrainingJob)
	validateCreate func(job *musterv1.TrainingJob) field.ErrorList
	validateUpdate func(oldJob, job *musterv1.TrainingJob) field.ErrorList
	gangBackends   []musterv1.GangBackend
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
	errs := h.validateCreate(job)
	if b := job.Spec.Scheduling.Backend; b != "" && b != musterv1.GangNone && !slices.Contains(h.gangBackends, b) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "scheduling", "backend"), b,
			append([]string{string(musterv1.GangNone)}, gangNames(h.gangBackends)...)))
	}
	return nil, invalid(job, errs)
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
	return nil, invalid(job, h.validateUpdate(oldJob, job))
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
