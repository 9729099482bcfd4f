package failure

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Classifier compiles the job's classification rules, checked before
// Muster's own table.
func ClassifierFor(job *musterv1.TrainingJob) (Classifier, field.ErrorList) {
	c := job.Spec.FailurePolicy.Classification
	if c == nil || len(c.Rules) == 0 {
		return Classifier{}, nil
	}
	patterns := make([]FailurePattern, 0, len(c.Rules))
	for _, r := range c.Rules {
		p := FailurePattern{
			PodReason: r.PodReason, PodMessage: r.PodMessage, ContainerName: r.Container,
			ContainerReason: r.ContainerReason, ContainerMessage: r.ContainerMessage,
			Code: r.Code, Phrase: r.Phrase, Attributes: attributesOf(r),
		}
		// A range's max is at least 1 when it is set at all.
		if r.ExitCodes.Max > 0 {
			p.ExitCodes = &Range{Min: r.ExitCodes.Min, Max: r.ExitCodes.Max}
		}
		if r.Signals.Max > 0 {
			p.Signals = &Range{Min: r.Signals.Min, Max: r.Signals.Max}
		}
		patterns = append(patterns, p)
	}
	return NewClassifier(patterns, ClassificationRulesPath)
}

// ClassificationRulesPath is where the classification rules sit in a job.
var ClassificationRulesPath = field.NewPath("spec", "failurePolicy", "classification", "rules")

func attributesOf(r musterv1.ClassificationRule) []Attribute {
	switch r.Class {
	case musterv1.ClassTransient:
		if ptr.Deref(r.Conflict, false) {
			return []Attribute{AttributeTransient, AttributeConflict}
		}
		return []Attribute{AttributeTransient}
	case musterv1.ClassPermanent:
		return []Attribute{AttributePermanent}
	}
	return nil
}
