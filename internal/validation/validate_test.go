package validation

import (
	"strings"
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestSpec(t *testing.T) {
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		want []string // substrings of the aggregated error; none: valid
	}{
		"valid": {job: testutil.MakeJob("j", "ns").Role("a", 1).Role("b", 1).DependsOn("a", musterv1.DependencyRunning).Obj()},
		"depends on a later role": {
			job:  testutil.MakeJob("j", "ns").Role("a", 1).DependsOn("b", musterv1.DependencyRunning).Role("b", 1).Obj(),
			want: []string{"spec.roles[0].dependsOn[0].role: Invalid value: \"b\": role b is not listed before role a"},
		},
		"a classification regex that does not compile": {
			job: func() *musterv1.TrainingJob {
				j := testutil.MakeJob("j", "ns").Role("a", 1).Obj()
				j.Spec.FailurePolicy.Classification = &musterv1.Classification{Rules: []musterv1.ClassificationRule{
					{ContainerMessage: "(unclosed", Class: musterv1.ClassTransient, Code: 1001, Phrase: "X"}}}
				return j
			}(),
			want: []string{"spec.failurePolicy.classification.rules[0].containerMessage"},
		},
		"a log regex without a group": {
			job: func() *musterv1.TrainingJob {
				j := testutil.MakeJob("j", "ns").Role("a", 2).Scalable(1, 4).Obj()
				j.Spec.Scaling.Autoscaling = musterv1.AutoscalingPolicy{Metric: musterv1.ThroughputMetric{LogRegex: "samples/s=[0-9.]+"}}
				return j
			}(),
			want: []string{"spec.scaling.autoscaling.metric.logRegex", "needs a group"},
		},
		"a rule that never matches": {
			job: testutil.MakeJob("j", "ns").Role("a", 1).
				Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed}, Action: musterv1.ActionRestartJob}).
				Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed}, Action: musterv1.ActionFailJob}).Obj(),
			want: []string{"spec.failurePolicy.rules[1]", "never matches"},
		},
		"a Stalled rule without stallSeconds": {
			job: testutil.MakeJob("j", "ns").Role("a", 1).Progress(28555, 0).
				Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventStalled}, Action: musterv1.ActionRestartJob}).Obj(),
			want: []string{"spec.failurePolicy.rules[0].onEvents", "Stalled needs spec.progress.stallSeconds"},
		},
		"a Stalled rule with stallSeconds": {
			job: testutil.MakeJob("j", "ns").Role("a", 1).Progress(28555, 600).
				Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventStalled}, Action: musterv1.ActionRestartJob}).Obj(),
		},
		"a Stalled rule limited to roles": {
			job: testutil.MakeJob("j", "ns").Role("a", 1).Progress(28555, 600).
				Rule(musterv1.FailureRule{OnEvents: []musterv1.FailureEvent{musterv1.EventStalled}, Roles: []string{"a"}, Action: musterv1.ActionRestartJob}).Obj(),
			want: []string{"spec.failurePolicy.rules[0].roles", "Stalled belongs to the whole job"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateCreate(tc.job)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(errs.ToAggregate().Error(), w) {
					t.Errorf("%v lacks %q", errs.ToAggregate(), w)
				}
			}
		})
	}
}

func TestValidateUpdateChecksOnlyChangedSpecs(t *testing.T) {
	bad := testutil.MakeJob("j", "ns").Role("a", 1).DependsOn("b", musterv1.DependencyRunning).Role("b", 1).Obj()
	if errs := ValidateUpdate(bad, bad.DeepCopy()); len(errs) > 0 {
		t.Errorf("a status or metadata update of an old job is let through: %v", errs)
	}
	changed := bad.DeepCopy()
	changed.Spec.Roles[1].Replicas = new(int32(2))
	if errs := ValidateUpdate(bad, changed); len(errs) == 0 {
		t.Error("a changed spec is checked")
	}
}
