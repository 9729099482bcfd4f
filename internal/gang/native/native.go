// Package native gangs a job through the Kubernetes scheduler's own gang
// scheduling (scheduling.k8s.io/v1alpha2, feature gates GenericWorkload and
// GangScheduling): one Workload per job with one PodGroupTemplate, one
// PodGroup per attempt, and each pod's spec.schedulingGroup naming it.
package native

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
)

// Template is the name of the Workload's one PodGroupTemplate.
const Template = "tasks"

// Backend is the native adapter.
type Backend struct{}

var _ gang.Backend = Backend{}

// Objects are the job's Workload and the attempt's PodGroup. Priority is
// left to the pods: the PodGroup's own priority needs the
// WorkloadAwarePreemption feature gate. A Required topology is the
// PodGroup's topology constraint (feature gate
// TopologyAwareWorkloadScheduling): the scheduler places the whole gang
// within one domain of the level, or none of it. The API has no preferred
// constraint; admission refuses a Preferred one outside Kueue.
func (Backend) Objects(job *musterv1.TrainingJob, g *gang.Gang) []client.Object {
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(job, musterv1.GroupVersion.WithKind("TrainingJob"))}
	policy := schedulingv1alpha2.PodGroupSchedulingPolicy{Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: g.MinAvailable}}
	var constraints *schedulingv1alpha2.PodGroupSchedulingConstraints
	if t := g.Topology; t != nil && t.Mode != musterv1.TopologyPreferred {
		constraints = &schedulingv1alpha2.PodGroupSchedulingConstraints{
			Topology: []schedulingv1alpha2.TopologyConstraint{{Key: t.Level}}}
	}
	workload := &schedulingv1alpha2.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: g.Job, Namespace: g.Namespace, OwnerReferences: owner,
			Labels: map[string]string{musterv1.LabelJobName: g.Job}},
		Spec: schedulingv1alpha2.WorkloadSpec{
			ControllerRef: &schedulingv1alpha2.TypedLocalObjectReference{
				APIGroup: musterv1.GroupVersion.Group, Kind: "TrainingJob", Name: job.Name},
			PodGroupTemplates: []schedulingv1alpha2.PodGroupTemplate{{Name: Template, SchedulingPolicy: policy,
				SchedulingConstraints: constraints}},
		},
	}
	group := &schedulingv1alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace, OwnerReferences: owner, Labels: gang.Labels(g)},
		Spec: schedulingv1alpha2.PodGroupSpec{
			PodGroupTemplateRef: &schedulingv1alpha2.PodGroupTemplateReference{
				Workload: &schedulingv1alpha2.WorkloadPodGroupTemplateReference{WorkloadName: g.Job, PodGroupTemplateName: Template}},
			SchedulingPolicy:      policy,
			SchedulingConstraints: constraints,
		},
	}
	return []client.Object{workload, group}
}

// Decorate names the attempt's PodGroup in the pod.
func (Backend) Decorate(pod *corev1.Pod, g *gang.Gang) {
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &g.Name}
	gang.SetPriority(pod, g)
}

// NewGroupList lists PodGroups.
func (Backend) NewGroupList() client.ObjectList { return &schedulingv1alpha2.PodGroupList{} }

// NewGroup is an empty PodGroup.
func (Backend) NewGroup() client.Object { return &schedulingv1alpha2.PodGroup{} }

// Observe reads the scheduler's PodGroupScheduled condition. A PodGroup
// admits its pods as soon as it exists: the scheduler holds them back
// until the whole gang fits.
func (Backend) Observe(obj client.Object) gang.State {
	pg, ok := obj.(*schedulingv1alpha2.PodGroup)
	if !ok {
		return gang.State{}
	}
	st := gang.State{Admitted: true}
	if c := apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha2.PodGroupScheduled); c != nil {
		st.Scheduled = new(c.Status == metav1.ConditionTrue)
		st.Reason, st.Message = c.Reason, c.Message
	}
	return st
}
