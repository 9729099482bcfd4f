package plan

import (
	"github.com/google/go-cmp/cmp"

	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestSeveralElasticRoles(t *testing.T) {
	job := testutil.MakeJob("e", "ns").UID("u").Role("a100", 2).Elastic(1, 4).Role("v100", 2).Elastic(0, 6).ScalingReplicas(6).Obj()
	job.Spec.Scaling.Roles[1].Weight = 2

	if got := topology.ScalableRoles(job); !cmp.Equal(got, []string{"a100", "v100"}) {
		t.Fatalf("ScalableRoles = %v", got)
	}
	eff := topology.Effective(job)
	if a, b := topology.Replicas(&eff.Spec.Roles[0]), topology.Replicas(&eff.Spec.Roles[1]); a != 2 || b != 4 {
		t.Fatalf("6 split 1:2 over min 1 / min 0 = %d, %d; want 2, 4", a, b)
	}
	pod, err := objects.DesiredPod(eff, &eff.Spec.Roles[1], 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := testutil.Env(pod.Spec.Containers[0])
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

// A running job that grows stays Running while its new tasks start, and
// says it is scaling.
func TestScaleUpKeepsTheJobRunning(t *testing.T) {
	job := testutil.MakeJob("el", "ns").UID("el").Role("worker", 2).Elastic(1, 4).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
	job.Spec.Runtime.PyTorch.Elastic.Rendezvous.Store = musterv1.StoreWorker
	w := newWorld(t, job)
	w.runAll()
	if w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("phase %s", w.job.Status.Phase)
	}
	w.job.Spec.Scaling.Replicas = new(int32(4))
	w.step()
	w.step()
	c := w.job.Status.Condition(musterv1.ConditionRunning)
	if w.job.Status.Phase != musterv1.PhaseRunning || c == nil || c.Reason != string(musterv1.ReasonScaling) {
		t.Fatalf("growing: phase %s, Running condition %+v", w.job.Status.Phase, c)
	}
	w.runEverything()
	if c := w.job.Status.Condition(musterv1.ConditionRunning); c.Reason != string(musterv1.ReasonPodsRunning) || w.job.Status.Ready != "4/4" {
		t.Fatalf("grown: %+v, ready %s", c, w.job.Status.Ready)
	}
}
