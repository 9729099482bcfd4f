// Package coscheduling gangs a job through the coscheduling plugin of
// kubernetes-sigs/scheduler-plugins: a scheduling.x-k8s.io/v1alpha1
// PodGroup per attempt, the pod-group label and that scheduler's name on
// every pod.
package coscheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
)

// GroupKind is the plugin's PodGroup.
var GroupKind = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}

// LabelPodGroup ties a pod to its PodGroup.
const LabelPodGroup = "scheduling.x-k8s.io/pod-group"

// DefaultSchedulerName is the name the scheduler-plugins manifests give
// the second scheduler.
const DefaultSchedulerName = "scheduler-plugins-scheduler"

// Backend is the coscheduling adapter.
type Backend struct {
	// SchedulerName is the profile of the scheduler that runs the plugin.
	SchedulerName string
}

var _ gang.Backend = Backend{}

// Objects is the attempt's PodGroup. It sets no minResources: with them the
// plugin's PreFilter checks the cluster's free room and, when it is short,
// rejects the pod as unresolvable, so that kube-scheduler never preempts
// for the gang; without them the pods reach the scheduler's
// DefaultPreemption, and the gang waits at Permit until it is whole.
func (Backend) Objects(job *musterv1.TrainingJob, g *gang.Gang) []client.Object {
	spec := map[string]any{"minMember": int64(g.MinAvailable)}
	if t := g.ScheduleTimeoutSeconds; t > 0 {
		spec["scheduleTimeoutSeconds"] = int64(t)
	}
	return []client.Object{gang.NewObject(GroupKind, job, g, spec)}
}

// Decorate labels the pod with its group and hands it to the plugin's
// scheduler.
func (b Backend) Decorate(pod *corev1.Pod, g *gang.Gang) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelPodGroup] = g.Name
	pod.Spec.SchedulerName = b.SchedulerName
	gang.SetPriority(pod, g)
}

// NewGroupList lists the plugin's PodGroups.
func (Backend) NewGroupList() client.ObjectList { return gang.NewList(GroupKind) }

// NewGroup is an empty PodGroup.
func (Backend) NewGroup() client.Object { return gang.Empty(GroupKind) }

// Observe reads the PodGroup's phase. The plugin holds pods at its Permit
// stage until minMember of them fit, so the group admits pods as soon as
// it exists.
func (Backend) Observe(obj client.Object) gang.State {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return gang.State{}
	}
	st := gang.State{Admitted: true}
	// A pending group says nothing useful: its pods may not exist yet.
	// Why they do not fit is in their own PodScheduled conditions.
	switch phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase {
	case "Scheduled", "Running", "Finished":
		st.Scheduled = new(true)
	}
	return st
}
