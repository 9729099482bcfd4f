package kueue

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Kueue's topology-aware scheduling (TAS) places a Workload's podSets in
// the domains of a Topology's node labels. A podSet's topologyRequest asks
// for a level, required or preferred; Kueue admits the Workload with a
// topology assignment (how many pods go to which domain), and its
// TopologyUngater gives each pod the node selector of its domain and
// removes the pod's TopologyGate. It does so for any pod that carries the
// gate, the podSet label and the Workload annotation, so Muster's pods
// need no Kueue integration of their own: Muster creates them gated and
// Kueue places them by their task index (podIndexLabel).
const (
	// TopologyGate is the scheduling gate Kueue's TopologyUngater removes.
	TopologyGate = "kueue.x-k8s.io/topology"
	// LabelPodSet names the pod's podSet (its role).
	LabelPodSet = "kueue.x-k8s.io/podset"
	// AnnotationWorkload names the pod's Workload.
	AnnotationWorkload = "kueue.x-k8s.io/workload"
	// AnnotationRequiredTopology and AnnotationPreferredTopology mark a pod
	// as placed by TAS, for Kueue's node-failure handling, as its own
	// integrations' pods are.
	AnnotationRequiredTopology      = "kueue.x-k8s.io/podset-required-topology"
	AnnotationPreferredTopology     = "kueue.x-k8s.io/podset-preferred-topology"
	AnnotationUnconstrainedTopology = "kueue.x-k8s.io/podset-unconstrained-topology"
	// MaxLevelLength is the longest level Kueue takes in a request.
	MaxLevelLength = 63
)

// JobTopologyFits is whether Kueue can place the job as a whole within
// one domain: one podSet, or a group of two where one is a single task
// (Kueue's podSet groups are a leader beside its workers).
func JobTopologyFits(job *musterv1.TrainingJob) bool {
	largest := func(r *musterv1.Role) int32 { return topology.MaxReplicas(job, r) }
	switch podSets(job, largest) {
	case 0, 1:
		return true
	case 2:
		for i := range job.Spec.Roles {
			r := &job.Spec.Roles[i]
			if topology.ScalingOf(job, r.Name) == nil && topology.Replicas(r) == 1 {
				return true
			}
		}
	}
	return false
}

// podSets is how many podSets a Workload of the job has, one per role
// while size(role) > 0: at the roles' current sizes for the Workload
// itself (topology.Replicas), at their largest for what the job may ever
// ask of Kueue (admission).
func podSets(job *musterv1.TrainingJob, size func(*musterv1.Role) int32) int {
	n := 0
	for i := range job.Spec.Roles {
		if size(&job.Spec.Roles[i]) > 0 {
			n++
		}
	}
	return n
}

// topologyRequest is a podSet's topologyRequest: the role's request, else
// the job's, with Muster's task index as the pods' rank (Kueue places
// neighbouring ranks close), or the job's name as the group's when the
// job's request spans several podSets (group). nil when none is asked for.
func topologyRequest(job *musterv1.TrainingJob, role *musterv1.Role, group bool) map[string]any {
	t := role.Topology.Requested()
	if t == nil {
		t = job.Spec.Scheduling.Topology.Requested()
	}
	if t == nil {
		return nil
	}
	req := map[string]any{}
	if t.Mode == musterv1.TopologyPreferred {
		req["preferred"] = t.Level
	} else {
		req["required"] = t.Level
	}
	if group && role.Topology.Requested() == nil {
		// Kueue refuses a group name that is a number; a job's name
		// starts with a letter. Kueue ranks a group's pods as a leader's
		// (0) and its workers' (1 and up), which Muster's task indices
		// are not: its pods are placed in the group's domain unranked.
		req["podSetGroupName"] = job.Name
	} else {
		req["podIndexLabel"] = musterv1.LabelTaskIndex
	}
	return req
}

// topologyRequests are the podSets' topology requests by name: the fields
// Muster sets, so that one Kueue might add never makes a Workload differ.
func topologyRequests(wl *unstructured.Unstructured) map[string]map[string]string {
	out := map[string]map[string]string{}
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	for _, s := range sets {
		m, _ := s.(map[string]any)
		name, _ := m["name"].(string)
		req, _ := m["topologyRequest"].(map[string]any)
		kept := map[string]string{}
		for _, k := range []string{"required", "preferred", "podIndexLabel", "podSetGroupName"} {
			if v, ok := req[k].(string); ok {
				kept[k] = v
			}
		}
		out[name] = kept
	}
	return out
}

// sameTopology is whether two Workloads ask for the same placement.
func sameTopology(have, want *unstructured.Unstructured) bool {
	return maps.EqualFunc(topologyRequests(have), topologyRequests(want), maps.Equal)
}

// placedAnnotations are the annotations that mark a podSet's pods as
// placed by TAS, read from the podSet's own topologyRequest: the level
// required or preferred, else unconstrained (a podSet Kueue placed by
// topology without a request, in a flavor that has a Topology). Kueue's
// TopologyUngater looks only at pods so marked.
func placedAnnotations(podSet map[string]any) map[string]string {
	req, _ := podSet["topologyRequest"].(map[string]any)
	if level, ok := req["required"].(string); ok {
		return map[string]string{AnnotationRequiredTopology: level}
	}
	if level, ok := req["preferred"].(string); ok {
		return map[string]string{AnnotationPreferredTopology: level}
	}
	return map[string]string{AnnotationUnconstrainedTopology: "true"}
}

// gate makes a pod wait for Kueue's TopologyUngater to place it in the
// domain Kueue assigned to it.
func gate(pod *corev1.Pod, role string, t *Gate) {
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: TopologyGate})
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelPodSet] = role
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Annotations, t.Annotations)
	pod.Annotations[AnnotationWorkload] = t.Workload
}

// Gate is what a pod of a podSet Kueue placed by topology carries.
type Gate struct {
	// Workload is the admitted Workload's name.
	Workload string
	// Annotations mark the pod as placed by TAS (placedAnnotations).
	Annotations map[string]string
}
