// Package validation holds the checks and defaults of a TrainingJob that
// the CRD's OpenAPI schema and CEL rules cannot express. The admission
// webhook (internal/webhook) calls these functions, so a job they reject is
// refused when it is created or updated, with the fields named, instead of
// failing later in the controller.
//
// What belongs here:
//   - regular expressions that must compile (CEL cannot compile an RE2
//     expression the way Go will);
//   - relations across the whole spec: dependency cycles and start order
//     between roles, failure rules that conflict with or are shadowed by an
//     earlier rule;
//   - defaults that depend on other fields (plain constant defaults belong
//     in the schema's +kubebuilder:default markers).
//
// What does not: anything a schema marker or a CEL rule on the type can say.
// Those are checked by the API server itself, without a webhook, and keep
// working where the webhook is not installed.
//
// The functions must be pure: no cluster reads, no clock. Errors carry
// field paths rooted at the job (spec.failurePolicy.rules[0].podReason), so
// a denial names what to fix.
package validation

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// ValidateCreate returns what is wrong with a new job.
func ValidateCreate(job *musterv1.TrainingJob) field.ErrorList {
	return validateRegexps(regexps(job), nil)
}

// ValidateUpdate returns what is wrong with an update from oldJob to job.
// Fields that CEL makes immutable are already checked. A job created before
// a rule existed must stay updatable, so rules here judge only what the
// update changes.
func ValidateUpdate(oldJob, job *musterv1.TrainingJob) field.ErrorList {
	return validateRegexps(regexps(job), regexps(oldJob))
}

// Default fills what the schema's defaults cannot: fields whose default
// depends on other fields. It runs before validation.
func Default(job *musterv1.TrainingJob) {}

// regexpField is one regular expression of the spec and where it is.
type regexpField struct {
	path *field.Path
	expr string
}

// regexps lists the spec's regular expressions, as the controller compiles
// them when it classifies failures and reads throughput.
func regexps(job *musterv1.TrainingJob) []regexpField {
	var exprs []regexpField
	add := func(path *field.Path, expr string) {
		if expr != "" {
			exprs = append(exprs, regexpField{path, expr})
		}
	}
	spec := field.NewPath("spec")
	if fp := job.Spec.FailurePolicy; fp != nil {
		for i, r := range fp.Rules {
			rule := spec.Child("failurePolicy", "rules").Index(i)
			add(rule.Child("podReason"), r.PodReason)
			add(rule.Child("podMessage"), r.PodMessage)
			add(rule.Child("container"), r.Container)
			add(rule.Child("containerReason"), r.ContainerReason)
			add(rule.Child("containerMessage"), r.ContainerMessage)
		}
	}
	if a := job.Spec.Autoscaling; a != nil {
		add(spec.Child("autoscaling", "metric", "logRegex"), a.Metric.LogRegex)
	}
	return exprs
}

// validateRegexps compiles each expression of exprs that old does not hold
// at the same path.
func validateRegexps(exprs, old []regexpField) field.ErrorList {
	unchanged := make(map[string]string, len(old))
	for _, o := range old {
		unchanged[o.path.String()] = o.expr
	}
	var errs field.ErrorList
	for _, e := range exprs {
		if prev, ok := unchanged[e.path.String()]; ok && prev == e.expr {
			continue
		}
		if _, err := regexp.Compile(e.expr); err != nil {
			errs = append(errs, field.Invalid(e.path, e.expr, err.Error()))
		}
	}
	return errs
}
