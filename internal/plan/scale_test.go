package plan

import (
	"github.com/google/go-cmp/cmp"

	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
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

func TestSeveralElasticRoles(t *testing.T) {
	job := testutil.MakeJob("e", "ns").UID("u").Role("a100", 2).Elastic(1, 4).Role("v100", 2).Elastic(0, 6).ScalingReplicas(6).Obj()
	job.Spec.Scaling.Roles[1].Weight = 2

	if got := ScalableRoles(job); !cmp.Equal(got, []string{"a100", "v100"}) {
		t.Fatalf("ScalableRoles = %v", got)
	}
	eff := Effective(job)
	if a, b := Replicas(&eff.Spec.Roles[0]), Replicas(&eff.Spec.Roles[1]); a != 2 || b != 4 {
		t.Fatalf("6 split 1:2 over min 1 / min 0 = %d, %d; want 2, 4", a, b)
	}
	pod, err := DesiredPod(eff, &eff.Spec.Roles[1], 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := envMap(pod.Spec.Containers[0])
	if env["PET_NNODES"] != "1:10" || env["PET_RDZV_ENDPOINT"] != "e-store.e:29400" {
		t.Errorf("one world over both roles: PET_NNODES %q endpoint %q", env["PET_NNODES"], env["PET_RDZV_ENDPOINT"])
	}
	if pod.Labels[musterv1.LabelScalable] != "true" {
		t.Error("scalable pods carry the scalable label, the /scale selector")
	}
	w := newWorld(t, job)
	w.step()
	if w.job.Status.Replicas != 6 || w.job.Status.Selector != "muster.dev/job-name=e,muster.dev/scalable=true" {
		t.Errorf("scale status: %d %q", w.job.Status.Replicas, w.job.Status.Selector)
	}
}
