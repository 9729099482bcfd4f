package integration

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
)

// Invalid jobs are rejected at admission with the field named, and nothing
// is created for them.
func TestInvalidJobsAreRejected(t *testing.T) {
	cases := map[string]struct {
		job       func(ns string) *musterv1.TrainingJob
		wantField string
	}{
		"duplicate role names": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).Role("w", 1).Obj()
			},
			wantField: "spec.roles[1]",
		},
		"role name not DNS-safe": {
			job:       func(ns string) *musterv1.TrainingJob { return testutil.MakeJob("j", ns).Role("Worker_1", 1).Obj() },
			wantField: "spec.roles[0].name",
		},
		"negative replicas": {
			job:       func(ns string) *musterv1.TrainingJob { return testutil.MakeJob("j", ns).Role("w", -1).Obj() },
			wantField: "spec.roles[0].replicas",
		},
		"no roles": {
			job:       func(ns string) *musterv1.TrainingJob { return testutil.MakeJob("j", ns).Obj() },
			wantField: "spec.roles",
		},
		"unknown restart policy": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).RestartPolicy("Sometimes").Obj()
			},
			wantField: "spec.roles[0].restartPolicy",
		},
		"pod restartPolicy set in the template": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).Template(func(p *corev1.PodTemplateSpec) {
					p.Spec.RestartPolicy = corev1.RestartPolicyAlways
				}).Obj()
			},
			wantField: "spec.roles[0]",
		},
		"minReplicas above replicas": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).Elastic(2, 4).Obj()
			},
			wantField: "spec.roles[0]",
		},
		"pod names too long": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob(strings.Repeat("a", 40), ns).Role(strings.Repeat("b", 30), 1).Obj()
			},
			wantField: "metadata.name and spec.roles[].name are too long",
		},
		"job name not a DNS-1035 label": {
			job:       func(ns string) *musterv1.TrainingJob { return testutil.MakeJob("1job", ns).Role("w", 1).Obj() },
			wantField: "metadata.name must be a DNS-1035 label",
		},
		"master role that does not exist": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).PyTorch().Role("w", 1).Obj()
				j.Spec.Runtime.PyTorch.MasterRole = "chief"
				return j
			},
			wantField: "spec.runtime.pytorch.masterRole",
		},
		"negative backoff limit": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).BackoffLimit(-1).Obj()
			},
			wantField: "spec.run.backoffLimit",
		},
	}
	e := newEnv(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			err := k8s.Create(e.ctx(), tc.job(e.ns))
			g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(gomega.ContainSubstring(tc.wantField))
		})
	}
	var jobs musterv1.TrainingJobList
	e.g.Expect(k8s.List(e.ctx(), &jobs, client.InNamespace(e.ns))).To(gomega.Succeed())
	e.g.Expect(jobs.Items).To(gomega.BeEmpty())
	e.g.Expect(e.pods("j")).To(gomega.BeEmpty())
}

func TestImmutableFieldsAreRejectedOnUpdate(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("imm").PyTorch().Role("master", 1).Role("worker", 1).Suspend(true).Obj())

	err := e.update("imm", func(job *musterv1.TrainingJob) { job.Spec.Runtime.PyTorch.Port = ptr.To(int32(1234)) })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.runtime is immutable"))

	err = e.update("imm", func(job *musterv1.TrainingJob) { job.Spec.Roles = job.Spec.Roles[:1] })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.roles: roles cannot be added, removed or reordered"))

	// Replicas and completion stay editable.
	e.g.Expect(e.update("imm", func(job *musterv1.TrainingJob) { job.Spec.Roles[1].Replicas = 3 })).To(gomega.Succeed())
}

// What CEL cannot check, the admission webhook does: a regular expression
// that does not compile is refused with its field named, on create and on
// an update that introduces it.
func TestWebhookRejectsRegexpsThatDoNotCompile(t *testing.T) {
	e := newEnv(t)
	withRule := func(name, containerMessage string) *musterv1.TrainingJob {
		job := e.job(name).Role("w", 1).Suspend(true).Obj()
		job.Spec.FailurePolicy = &musterv1.FailurePolicy{Rules: []musterv1.FailureRule{{
			ContainerMessage: containerMessage, Type: musterv1.FailurePermanent, Code: 300, Phrase: "bad-input",
		}}}
		return job
	}

	err := k8s.Create(e.ctx(), withRule("bad", "bad input: ("))
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.failurePolicy.rules[0].containerMessage"))
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("missing closing )"))
	e.g.Expect(apierrors.IsNotFound(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "bad"}, &musterv1.TrainingJob{}))).
		To(gomega.BeTrue(), "the refused job does not exist")

	e.create(withRule("good", "bad input: (.*)"))
	err = e.update("good", func(job *musterv1.TrainingJob) { job.Spec.FailurePolicy.Rules[0].ContainerMessage = "[" })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.failurePolicy.rules[0].containerMessage"))
}
