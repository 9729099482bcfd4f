package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestEffectiveReplicas(t *testing.T) {
	elastic := testutil.MakeJob("e", "ns").Role("launcher", 1).Role("worker", 4).Elastic(2, 4).ScalingReplicas(3).Obj()
	single := testutil.MakeJob("s", "ns").Role("w", 2).Scalable(1, 8).ScalingReplicas(5).Obj()
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		role []string
		want []int32
	}{
		"the elastic role is scalable":        {elastic, []string{"worker"}, []int32{1, 3}},
		"any role can be scalable":            {single, []string{"w"}, []int32{5}},
		"without spec.scaling nothing scales": {testutil.MakeJob("u", "ns").Role("w", 2).Obj(), nil, []int32{2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.role, ScalableRoles(tc.job)); diff != "" {
				t.Errorf("ScalableRoles (-want +got):\n%s", diff)
			}
			eff := Effective(tc.job)
			for i, want := range tc.want {
				if got := Replicas(&eff.Spec.Roles[i]); got != want {
					t.Errorf("role %d replicas = %d, want %d", i, got, want)
				}
			}
		})
	}
	if elastic.Spec.Roles[1].Replicas != nil {
		t.Error("Effective must not change its input")
	}
	if got := Replicas(&testutil.MakeJob("d", "ns").Role("a", 1).Obj().Spec.Roles[0]); got != 1 {
		t.Errorf("replicas = %d", got)
	}
}

func role(name string, minN, maxN, w int32) musterv1.ScalingRole {
	r := musterv1.ScalingRole{Name: name, MaxReplicas: maxN}
	if minN >= 0 {
		r.MinReplicas = new(minN)
	}
	if w > 0 {
		r.Weight = w
	}
	return r
}

func TestSplit(t *testing.T) {
	cases := map[string]struct {
		total int32
		roles []musterv1.ScalingRole
		want  []int32
	}{
		"one role takes it all":          {5, []musterv1.ScalingRole{role("a", -1, 10, 0)}, []int32{5}},
		"equal weights share evenly":     {6, []musterv1.ScalingRole{role("a", 1, 8, 0), role("b", 1, 8, 0)}, []int32{3, 3}},
		"weights 1:3":                    {8, []musterv1.ScalingRole{role("a", 0, 8, 1), role("b", 0, 8, 3)}, []int32{2, 6}},
		"minimums first":                 {4, []musterv1.ScalingRole{role("a", 3, 8, 1), role("b", 0, 8, 1)}, []int32{3, 1}},
		"minimum 1 by default":           {1, []musterv1.ScalingRole{role("a", 0, 8, 1), role("b", -1, 8, 1)}, []int32{0, 1}},
		"a full role leaves the rest":    {7, []musterv1.ScalingRole{role("a", 0, 2, 3), role("b", 0, 8, 1)}, []int32{2, 5}},
		"ties go to the earlier role":    {3, []musterv1.ScalingRole{role("a", 0, 8, 0), role("b", 0, 8, 0)}, []int32{2, 1}},
		"beyond every maximum stays out": {9, []musterv1.ScalingRole{role("a", 0, 2, 0), role("b", 0, 3, 0)}, []int32{2, 3}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Split(tc.total, tc.roles)); diff != "" {
				t.Errorf("Split (-want +got):\n%s", diff)
			}
		})
	}
}
