// Package validation checks what the CRD's schema and CEL rules cannot say:
// regular expressions that must compile, the order of role dependencies,
// failure rules that could never match. The admission webhook runs it, so
// an invalid job is rejected with the field named before anything exists;
// the planner runs it too, so a job that reached the cluster some other
// way (the webhook not installed, a spec written before an upgrade) fails
// at once with reason InvalidSpec instead of running wrongly.
package validation

import (
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
)

// ValidateCreate checks a job that is being created.
func ValidateCreate(job *musterv1.TrainingJob) field.ErrorList {
	return append(Spec(&job.Spec), TensorBoard(&job.Spec)...)
}

// ValidateUpdate checks a job that is being changed. Only a spec that
// changed is checked again, so a job admitted by an older, more lenient
// operator can still be updated (its status, its labels) and deleted.
func ValidateUpdate(oldJob, job *musterv1.TrainingJob) field.ErrorList {
	if equality.Semantic.DeepEqual(oldJob.Spec, job.Spec) {
		return nil
	}
	return append(Spec(&job.Spec), TensorBoard(&job.Spec)...)
}

// Default fills in what cannot be a schema default. Every default is the
// schema's, so no mutating webhook is installed (each would cost every
// create and update a call to the operator); a default that needs a rule
// would bring one back, with its configuration in config/webhook.
func Default(*musterv1.TrainingJob) {}

// Spec checks a job's spec.
func Spec(spec *musterv1.TrainingJobSpec) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, dependencies(spec.Roles)...)
	errs = append(errs, failure.ValidateRules(spec.FailurePolicy.Rules, field.NewPath("spec", "failurePolicy", "rules"))...)
	_, classErrs := failure.ClassifierFor(&musterv1.TrainingJob{Spec: *spec})
	errs = append(errs, classErrs...)
	errs = append(errs, stallRules(spec)...)
	if re := spec.Scaling.Autoscaling.Metric.LogRegex; re != "" {
		errs = append(errs, logRegex(re,
			field.NewPath("spec", "scaling", "autoscaling", "metric", "logRegex"))...)
	}
	return errs
}

// stallRules refuses a rule on the Stalled event of a job that never
// stalls: without spec.progress.stallSeconds it would never match.
func stallRules(spec *musterv1.TrainingJobSpec) field.ErrorList {
	if spec.Progress.Enabled() && spec.Progress.StallSeconds > 0 {
		return nil
	}
	for i, r := range spec.FailurePolicy.Rules {
		if slices.Contains(r.OnEvents, musterv1.EventStalled) {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "failurePolicy", "rules").Index(i).Child("onEvents"), r.OnEvents,
				"Stalled needs spec.progress.stallSeconds: without it the job never stalls")}
		}
	}
	return nil
}

// dependencies checks that a role depends only on roles listed before it,
// so that there is never a cycle. CEL cannot afford the check.
func dependencies(roles []musterv1.Role) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, r := range roles {
		for j, d := range r.DependsOn {
			if !seen[d.Role] {
				errs = append(errs, field.Invalid(field.NewPath("spec", "roles").Index(i).Child("dependsOn").Index(j).Child("role"), d.Role,
					fmt.Sprintf("role %s is not listed before role %s; a role may depend only on earlier roles", d.Role, r.Name)))
			}
		}
		seen[r.Name] = true
	}
	return errs
}

// logRegex needs a group: its first group is the sample.
func logRegex(expr string, path *field.Path) field.ErrorList {
	re, err := regexp.Compile(expr)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(path, expr, "not a regular expression: "+err.Error())}
	case re.NumSubexp() < 1:
		return field.ErrorList{field.Invalid(path, expr, "needs a group, e.g. samples/s=([0-9.]+): its first group is the sample")}
	}
	return nil
}
