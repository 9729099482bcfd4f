package validation

import (
	"testing"

	"github.com/onsi/gomega"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
)

func jobWithRegexps(containerMessage, logRegex string) *musterv1.TrainingJob {
	job := testutil.MakeJob("j", "ns").Role("w", 1).Obj()
	job.Spec.FailurePolicy = &musterv1.FailurePolicy{Rules: []musterv1.FailureRule{
		{PodReason: "Evicted", Type: musterv1.FailureTransient, Code: 1, Phrase: "evicted"},
		{ContainerMessage: containerMessage, Type: musterv1.FailurePermanent, Code: 2, Phrase: "bad"},
	}}
	job.Spec.Autoscaling = &musterv1.AutoscalingPolicy{Metric: musterv1.ThroughputMetric{LogRegex: logRegex}}
	return job
}

func TestValidateCreateCompilesRegexps(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(ValidateCreate(jobWithRegexps("CUDA error: .*", `samples/s=([0-9.]+)`))).To(gomega.BeEmpty())

	errs := ValidateCreate(jobWithRegexps("CUDA error: (", `samples/s=([0-9.]+`))
	g.Expect(errs).To(gomega.HaveLen(2))
	g.Expect(errs[0].Field).To(gomega.Equal("spec.failurePolicy.rules[1].containerMessage"))
	g.Expect(errs[1].Field).To(gomega.Equal("spec.autoscaling.metric.logRegex"))
}

// An update is judged on what it changes: a job admitted before a rule
// existed stays updatable.
func TestValidateUpdateJudgesChangedRegexpsOnly(t *testing.T) {
	g := gomega.NewWithT(t)
	old := jobWithRegexps("(", "")
	job := old.DeepCopy()
	job.Spec.Roles[0].Replicas = 2
	g.Expect(ValidateUpdate(old, job)).To(gomega.BeEmpty())

	job.Spec.FailurePolicy.Rules[0].PodReason = "Evicted|("
	errs := ValidateUpdate(old, job)
	g.Expect(errs).To(gomega.HaveLen(1))
	g.Expect(errs[0].Field).To(gomega.Equal("spec.failurePolicy.rules[0].podReason"))
}
