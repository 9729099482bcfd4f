package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/policy"
)

// validate checks what CEL cannot: the failure rules' regular expressions
// and the lifecycle policies taken together. An invalid job fails at once,
// before anything is created for it, with the fields named.
func (p *planner) validate() bool {
	c, err := Classifier(p.job)
	if err == nil {
		names := make([]string, 0, len(p.job.Spec.Roles))
		for _, r := range p.job.Spec.Roles {
			names = append(names, r.Name)
		}
		err = policy.ValidatePolicies(p.policies, names, fieldPath("spec", "policies")).ToAggregate()
	}
	if err != nil {
		p.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonInvalidSpec, Message: err.Error()})
		return false
	}
	p.classifier = c
	return true
}
