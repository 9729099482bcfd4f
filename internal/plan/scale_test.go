package plan

import (
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestEffectiveReplicas(t *testing.T) {
	elastic := testutil.MakeJob("e", "ns").Role("launcher", 1).Role("worker", 4).Elastic(2, 4).Obj()
	elastic.Spec.Replicas = new(int32(3))
	single := testutil.MakeJob("s", "ns").Role("w", 2).Obj()
	single.Spec.Replicas = new(int32(5))
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		role string
		want []int32
	}{
		"the elastic role is scalable": {elastic, "worker", []int32{1, 3}},
		"a single role is scalable":    {single, "w", []int32{5}},
		"unset leaves the roles alone": {testutil.MakeJob("u", "ns").Role("w", 2).Obj(), "w", []int32{2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ScalableRole(tc.job); got != tc.role {
				t.Errorf("ScalableRole = %q, want %q", got, tc.role)
			}
			eff := Effective(tc.job)
			for i, want := range tc.want {
				if got := eff.Spec.Roles[i].Replicas; got != want {
					t.Errorf("role %d replicas = %d, want %d", i, got, want)
				}
			}
		})
	}
	if elastic.Spec.Roles[1].Replicas != 4 {
		t.Error("Effective must not change its input")
	}
	if ScalableRole(testutil.MakeJob("m", "ns").Role("a", 1).Role("b", 1).Obj()) != "" {
		t.Error("several roles and no elastic one: nothing is scalable")
	}
}
