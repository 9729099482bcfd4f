package native_test

import (
	"testing"

	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/gang/native"
	"github.com/muster-dev/muster/internal/testutil"
)

// A Required topology is the PodGroup's (and its template's) topology
// constraint; a job without one has none.
func TestRequiredTopologyIsThePodGroupsConstraint(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("worker", 4).Obj()
	job.Spec.Scheduling.Topology = musterv1.Topology{Level: "example.com/block", Mode: musterv1.TopologyRequired}
	objs := native.Backend{}.Objects(job, gang.For(job, musterv1.GangNative, 0))
	wl, pg := objs[0].(*schedulingv1alpha2.Workload), objs[1].(*schedulingv1alpha2.PodGroup)
	for name, c := range map[string]*schedulingv1alpha2.PodGroupSchedulingConstraints{
		"PodGroup": pg.Spec.SchedulingConstraints, "template": wl.Spec.PodGroupTemplates[0].SchedulingConstraints,
	} {
		if c == nil || len(c.Topology) != 1 || c.Topology[0].Key != "example.com/block" {
			t.Errorf("%s constraints = %+v, want topology example.com/block", name, c)
		}
	}
	job.Spec.Scheduling.Topology = musterv1.Topology{}
	pg = native.Backend{}.Objects(job, gang.For(job, musterv1.GangNative, 0))[1].(*schedulingv1alpha2.PodGroup)
	if pg.Spec.SchedulingConstraints != nil {
		t.Errorf("constraints without a request = %+v", pg.Spec.SchedulingConstraints)
	}
}
