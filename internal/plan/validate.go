package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/policy"
	"github.com/muster-dev/muster/internal/validation"
)

// validate checks what CEL cannot, as the admission webhook does. A job
// that reached the cluster without the webhook and breaks a rule fails at
// once, before anything is created for it, with the fields named.
func (p *planner) validate() bool {
	if errs := validation.Spec(&p.job.Spec); len(errs) > 0 {
		p.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonInvalidSpec, Message: errs.ToAggregate().Error()})
		return false
	}
	p.classifier, _ = policy.ClassifierFor(p.job)
	return true
}
