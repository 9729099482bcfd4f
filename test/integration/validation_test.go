package integration

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
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
		"no spec at all": {
			job:       func(ns string) *musterv1.TrainingJob { return testutil.MakeJob("j", ns).Obj() },
			wantField: "spec: Required value",
		},
		"no roles": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).Obj()
				j.Spec.Run.Execution = musterv1.ExecutionStart
				return j
			},
			wantField: "spec.roles: Required value",
		},
		"a role with no pod spec": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).Role("w", 1).Obj()
				j.Spec.Roles[0].Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}
				return j
			},
			wantField: "spec.roles[0].template.spec.containers: Required value",
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
		"replicas below the scalable roles' minimum": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).Elastic(2, 4).Obj()
			},
			wantField: "spec.scaling.replicas must lie between",
		},
		"minReplicas above maxReplicas": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 4).Scalable(5, 4).Obj()
			},
			wantField: "spec.scaling.roles[0]: Invalid value: minReplicas must not exceed maxReplicas",
		},
		"replicas beyond every bound": {
			job:       func(ns string) *musterv1.TrainingJob { return testutil.MakeJob("j", ns).Role("w", 2000000000).Obj() },
			wantField: "spec.roles[0].replicas: Invalid value: 2000000000: spec.roles[0].replicas in body should be less than or equal to 10000",
		},
		"more than 10000 tasks": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("ps", 5000).Role("w", 100).Scalable(1, 5001).Obj()
			},
			wantField: "spec.roles: Invalid value: a job may have at most 10000 tasks",
		},
		"a scalable role with replicas of its own": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).Role("w", 2).Scalable(1, 4).Obj()
				j.Spec.Roles[0].Replicas = new(int32(2))
				return j
			},
			wantField: "spec.roles[].replicas must be unset for a scalable role",
		},
		"elastic without spec.scaling": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).PyTorch().Role("w", 2).Obj()
				j.Spec.Runtime.PyTorch.Elastic = &musterv1.ElasticPolicy{}
				return j
			},
			wantField: "spec.runtime.pytorch.elastic needs spec.scaling",
		},
		"pod names too long": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob(strings.Repeat("a", 30), ns).Role(strings.Repeat("b", 27), 1).Obj()
			},
			wantField: "spec.roles: Invalid value: metadata.name and spec.roles[].name together must be at most 56 characters",
		},
		"a rule on PodPending without a timeout": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).Rule(musterv1.FailureRule{
					OnEvents: []musterv1.FailureEvent{musterv1.EventPodPending}, Action: musterv1.ActionRestartTask}).Obj()
			},
			wantField: "spec.failurePolicy.rules[0]: Invalid value: onEvents: PodPending needs timeoutSeconds",
		},
		"a rule naming an unknown role": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).Rule(musterv1.FailureRule{
					OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed}, Roles: []string{"ps"}, Action: musterv1.ActionRestartJob}).Obj()
			},
			wantField: "spec.failurePolicy.rules[].roles must name roles in spec.roles",
		},
		"exit code 0 as a failure": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).Rule(musterv1.FailureRule{
					OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{0, 3}}, Action: musterv1.ActionFailJob}).Obj()
			},
			wantField: "spec.failurePolicy.rules[0].onExitCodes",
		},
		"a metrics path that is not a path": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).Role("w", 2).Scalable(1, 4).Obj()
				j.Spec.Scaling.Autoscaling = musterv1.AutoscalingPolicy{Metric: musterv1.ThroughputMetric{
					Endpoint: musterv1.MetricEndpoint{Port: 9090, Path: "@169.254.169.254/latest", Name: "samples"}}}
				return j
			},
			wantField: "spec.scaling.autoscaling.metric.endpoint.path",
		},
		"job name not a DNS-1035 label": {
			job:       func(ns string) *musterv1.TrainingJob { return testutil.MakeJob("1job", ns).Role("w", 1).Obj() },
			wantField: "metadata: Invalid value: metadata.name must be a DNS-1035 label",
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
			wantField: "spec.failurePolicy.backoffLimit",
		},
		"a TensorBoard on a volume the job does not have": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).Role("w", 1).TensorBoard("", -1).Obj()
				j.Spec.TensorBoard.Logs.Volume = "runs"
				return j
			},
			wantField: `spec.tensorboard.logs.volume: Invalid value: "runs": names no volume`,
		},
		"a TensorBoard on an emptyDir": {
			job: func(ns string) *musterv1.TrainingJob {
				j := testutil.MakeJob("j", ns).Role("w", 1).TensorBoard("", -1).Obj()
				j.Spec.Roles[0].Template.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
				return j
			},
			wantField: "spec.tensorboard.logs.volume: Invalid value: \"logs\": names a volume of kind emptyDir",
		},
		"a TensorBoard sub-path out of the volume": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob("j", ns).Role("w", 1).TensorBoard("runs/../..", -1).Obj()
			},
			wantField: "spec.tensorboard.logs.subPath must be a relative path without '..'",
		},
		"a TensorBoard whose Service name would be too long": {
			job: func(ns string) *musterv1.TrainingJob {
				return testutil.MakeJob(strings.Repeat("j", 52), ns).Role("w", 1).TensorBoard("", -1).Obj()
			},
			wantField: "spec.tensorboard: Invalid value: spec.tensorboard needs metadata.name of at most 51 characters",
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

	err := e.update("imm", func(job *musterv1.TrainingJob) { job.Spec.Runtime.PyTorch.Port = 1234 })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.runtime is immutable"))

	err = e.update("imm", func(job *musterv1.TrainingJob) { job.Spec.Roles = job.Spec.Roles[:1] })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.roles: roles cannot be added, removed or reordered"))

	// Replicas and completion stay editable.
	e.g.Expect(e.update("imm", func(job *musterv1.TrainingJob) { job.Spec.Roles[1].Replicas = new(int32(3)) })).To(gomega.Succeed())
}

// What CEL cannot check, the admission webhook does: a regular expression
// that does not compile is refused with its field named, on create and on
// an update that introduces it.
func TestWebhookRejectsRegexpsThatDoNotCompile(t *testing.T) {
	e := newEnv(t)
	withRule := func(name, containerMessage string) *musterv1.TrainingJob {
		job := e.job(name).Role("w", 1).Suspend(true).Obj()
		job.Spec.FailurePolicy.Classification = &musterv1.Classification{Rules: []musterv1.ClassificationRule{{
			ContainerMessage: containerMessage, Class: musterv1.ClassPermanent, Code: 300, Phrase: "bad-input",
		}}}
		return job
	}

	err := k8s.Create(e.ctx(), withRule("bad", "bad input: ("))
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.failurePolicy.classification.rules[0].containerMessage"))
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("missing closing )"))
	e.g.Expect(apierrors.IsNotFound(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "bad"}, &musterv1.TrainingJob{}))).
		To(gomega.BeTrue(), "the refused job does not exist")

	e.create(withRule("good", "bad input: (.*)"))
	err = e.update("good", func(job *musterv1.TrainingJob) { job.Spec.FailurePolicy.Classification.Rules[0].ContainerMessage = "[" })
	e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
	e.g.Expect(err.Error()).To(gomega.ContainSubstring("spec.failurePolicy.classification.rules[0].containerMessage"))
}

// The other checks CEL cannot make: dependency order, failure rules an
// earlier rule hides, an autoscaler log regex without a group. Each is
// refused at admission with its field named, and nothing is created.
func TestWebhookRejectsWhatCELCannotSay(t *testing.T) {
	e := newEnv(t)
	onFailed := []musterv1.FailureEvent{musterv1.EventPodFailed}
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		want string
	}{
		"a dependency on a later role": {
			job:  e.job("dep").Role("worker", 1).DependsOn("master", musterv1.DependencyRunning).Role("master", 1).Obj(),
			want: "spec.roles[0].dependsOn[0].role: Invalid value: \"master\": role master is not listed before role worker",
		},
		"a rule an earlier rule hides": {
			job: e.job("hidden").Role("ps", 1).
				Rule(musterv1.FailureRule{OnEvents: onFailed, Roles: []string{"ps"}, Action: musterv1.ActionRestartRole}).
				Rule(musterv1.FailureRule{OnEvents: onFailed, Roles: []string{"ps"}, Action: musterv1.ActionFailJob}).Obj(),
			want: "spec.failurePolicy.rules[1]: Invalid value: \"action FailJob on [PodFailed] of roles [ps]\": never matches: spec.failurePolicy.rules[0] (action RestartRole)",
		},
		"a log regex without a group": {
			job: func() *musterv1.TrainingJob {
				j := e.job("auto").Role("w", 2).Scalable(1, 4).Obj()
				j.Spec.Scaling.Autoscaling = musterv1.AutoscalingPolicy{Metric: musterv1.ThroughputMetric{LogRegex: "samples/s=[0-9.]+"}}
				return j
			}(),
			want: "spec.scaling.autoscaling.metric.logRegex",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			err := k8s.Create(e.ctx(), tc.job)
			g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(gomega.ContainSubstring(tc.want))
			g.Expect(e.pods(tc.job.Name)).To(gomega.BeEmpty())
		})
	}
}
