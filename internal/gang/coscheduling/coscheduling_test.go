package coscheduling_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/gang/coscheduling"
	"github.com/muster-dev/muster/internal/testutil"
)

// The PodGroup carries minMember and the timeout, and no minResources: with
// minResources the plugin's PreFilter compares them with the cluster's free
// room and, on a full cluster, rejects the pod as unresolvable, which rules
// out kube-scheduler's preemption for every gang that needs it.
func TestPodGroupLeavesPreemptionPossible(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("worker", 4).Obj()
	job.Spec.Scheduling = musterv1.Scheduling{Backend: musterv1.GangCoscheduling, ScheduleTimeoutSeconds: 60, PriorityClassName: "high"}
	g := gang.For(job, musterv1.GangCoscheduling, 2)
	objs := coscheduling.Backend{}.Objects(job, g)
	if len(objs) != 1 {
		t.Fatalf("objects: %d, want one PodGroup", len(objs))
	}
	pg := objs[0].(*unstructured.Unstructured)
	spec, _, _ := unstructured.NestedMap(pg.Object, "spec")
	if spec["minMember"] != int64(4) || spec["scheduleTimeoutSeconds"] != int64(60) {
		t.Errorf("spec %v: want minMember 4 and scheduleTimeoutSeconds 60", spec)
	}
	if _, ok := spec["minResources"]; ok {
		t.Errorf("spec %v sets minResources: the plugin would refuse preemption on a full cluster", spec)
	}
	if pg.GetName() != "j-2" {
		t.Errorf("name %q, want j-2 (the attempt's)", pg.GetName())
	}
}
