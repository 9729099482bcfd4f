package plan

import (
	"github.com/google/go-cmp/cmp"

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

func role(name string, minN, maxN, w int32) *musterv1.Role {
	r := &musterv1.Role{Name: name}
	if minN >= 0 {
		r.MinReplicas = new(minN)
	}
	if maxN >= 0 {
		r.MaxReplicas = new(maxN)
	}
	if w > 0 {
		r.ScalingWeight = new(w)
	}
	return r
}

func TestSplit(t *testing.T) {
	cases := map[string]struct {
		total int32
		roles []*musterv1.Role
		want  []int32
	}{
		"one role takes it all":          {5, []*musterv1.Role{role("a", -1, -1, 0)}, []int32{5}},
		"equal weights share evenly":     {6, []*musterv1.Role{role("a", 1, 8, 0), role("b", 1, 8, 0)}, []int32{3, 3}},
		"weights 1:3":                    {8, []*musterv1.Role{role("a", 0, 8, 1), role("b", 0, 8, 3)}, []int32{2, 6}},
		"minimums first":                 {4, []*musterv1.Role{role("a", 3, 8, 1), role("b", 0, 8, 1)}, []int32{3, 1}},
		"a full role leaves the rest":    {7, []*musterv1.Role{role("a", 0, 2, 3), role("b", 0, 8, 1)}, []int32{2, 5}},
		"ties go to the earlier role":    {3, []*musterv1.Role{role("a", 0, 8, 0), role("b", 0, 8, 0)}, []int32{2, 1}},
		"beyond every maximum stays out": {9, []*musterv1.Role{role("a", 0, 2, 0), role("b", 0, 3, 0)}, []int32{2, 3}},
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
	job := testutil.MakeJob("e", "ns").UID("u").Role("a100", 2).Elastic(1, 4).Role("v100", 2).Obj()
	job.Spec.Runtime.PyTorch.Elastic.AdditionalRoles = []string{"v100"}
	v := &job.Spec.Roles[1]
	v.MinReplicas, v.MaxReplicas, v.ScalingWeight = new(int32(0)), new(int32(6)), new(int32(2))
	job.Spec.Replicas = new(int32(6))

	if got := ScalableRoles(job); !cmp.Equal(got, []string{"a100", "v100"}) {
		t.Fatalf("ScalableRoles = %v", got)
	}
	eff := Effective(job)
	if a, b := eff.Spec.Roles[0].Replicas, eff.Spec.Roles[1].Replicas; a != 2 || b != 4 {
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
	if pod.Labels[musterv1.LabelElastic] != "true" {
		t.Error("elastic pods carry the elastic label, the /scale selector")
	}
	w := newWorld(t, eff)
	w.job.Spec = job.Spec
	w.step()
	if w.job.Status.Replicas != 6 || w.job.Status.Selector != "muster.dev/job-name=e,muster.dev/elastic=true" {
		t.Errorf("scale status: %d %q", w.job.Status.Replicas, w.job.Status.Selector)
	}
}
