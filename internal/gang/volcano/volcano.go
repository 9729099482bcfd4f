// Package volcano gangs a job through the Volcano scheduler: a
// scheduling.volcano.sh/v1beta1 PodGroup per attempt in the job's queue,
// the group-name annotation and Volcano's scheduler name on every pod.
// Like Volcano's own job controller, Muster creates the pods only once the
// PodGroup is Inqueue, so a job its queue has not admitted holds nothing.
package volcano

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// GroupKind is Volcano's PodGroup.
var GroupKind = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}

// Annotations Volcano's scheduler reads from a pod.
const (
	// AnnotationGroupName names the pod's PodGroup.
	AnnotationGroupName = "scheduling.k8s.io/group-name"
	// AnnotationTaskSpec names the pod's task (role), which minTaskMember
	// counts by.
	AnnotationTaskSpec = "volcano.sh/task-spec"
)

// DefaultSchedulerName is Volcano's scheduler name.
const DefaultSchedulerName = "volcano"

// Backend is the Volcano adapter.
type Backend struct {
	SchedulerName string
}

var _ gang.Backend = Backend{}

// Objects is the attempt's PodGroup. minResources is what the gang's
// minimum requests, so Volcano admits it to its queue only when the queue
// has room for all of it.
func (Backend) Objects(job *musterv1.TrainingJob, g *gang.Gang) []client.Object {
	spec := map[string]any{"minMember": int64(g.MinAvailable), "queue": g.Queue}
	if len(g.RoleMin) > 0 {
		per := map[string]any{}
		for _, m := range g.RoleMin {
			per[m.Role] = int64(m.Min)
		}
		spec["minTaskMember"] = per
	}
	if g.PriorityClassName != "" {
		spec["priorityClassName"] = g.PriorityClassName
	}
	if t := g.Topology; t != nil {
		spec["networkTopology"] = NetworkTopology(t)
	}
	if len(g.RoleTopology) > 0 {
		spec["subGroupPolicy"] = subGroups(g.RoleTopology)
	}
	if res := MinResources(job, g); len(res) > 0 {
		out := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(res)) {
			q := res[name]
			out[string(name)] = q.String()
		}
		spec["minResources"] = out
	}
	return []client.Object{gang.NewObject(GroupKind, job, g, spec)}
}

// NetworkTopology is Volcano's network topology for a topology request:
// hard for Required, soft for Preferred, no higher than the HyperNode tier
// named after the level. Volcano's label-based HyperNode discovery names
// each tier after the node label it groups by, so the level is the tier's
// name.
func NetworkTopology(t *musterv1.Topology) map[string]any {
	mode := "hard"
	if t.Mode == musterv1.TopologyPreferred {
		mode = "soft"
	}
	return map[string]any{"mode": mode, "highestTierName": t.Level}
}

// subGroups are the PodGroup's subgroups for the roles' own topology
// requests: one per role, its pods (those of the role label's value) held
// within one HyperNode of the tier as Volcano places its minimum.
func subGroups(roles []gang.RoleTopology) []any {
	out := make([]any, 0, len(roles))
	for _, r := range roles {
		out = append(out, map[string]any{
			"name":            r.Role,
			"labelSelector":   map[string]any{"matchLabels": map[string]any{musterv1.LabelRole: r.Role}},
			"matchLabelKeys":  []any{musterv1.LabelRole},
			"subGroupSize":    int64(max(r.Min, 1)),
			"networkTopology": NetworkTopology(&r.Topology),
		})
	}
	return out
}

// MinResources sums the requests of the gang's minimum: each role's own
// minimum first, then the remaining members taken from the roles in spec
// order.
func MinResources(job *musterv1.TrainingJob, g *gang.Gang) corev1.ResourceList {
	job = topology.Effective(job)
	counts := make([]int32, len(job.Spec.Roles))
	left := g.MinAvailable
	for i, r := range job.Spec.Roles {
		for _, m := range g.RoleMin {
			if m.Role == r.Name {
				counts[i] = min(m.Min, left)
				left -= counts[i]
			}
		}
	}
	for i := range job.Spec.Roles {
		take := min(topology.Replicas(&job.Spec.Roles[i])-counts[i], left)
		counts[i] += take
		left -= take
	}
	total := corev1.ResourceList{}
	for i, r := range job.Spec.Roles {
		for name, q := range podRequests(&r.Template.Spec) {
			q.Mul(int64(counts[i]))
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// podRequests is what one pod requests: its containers' requests (their
// limits where a request is unset, as the API server defaults them).
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				add(out, name, q)
			}
		}
		for name, q := range c.Resources.Requests {
			add(out, name, q)
		}
	}
	return out
}

func add(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := l[name]
	sum.Add(q)
	l[name] = sum
}

// Decorate names the pod's PodGroup and task and hands it to Volcano.
func (b Backend) Decorate(pod *corev1.Pod, g *gang.Gang) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationGroupName] = g.Name
	pod.Annotations[AnnotationTaskSpec] = pod.Labels[musterv1.LabelRole]
	pod.Spec.SchedulerName = b.SchedulerName
	gang.SetPriority(pod, g)
}

// NewGroupList lists Volcano's PodGroups.
func (Backend) NewGroupList() client.ObjectList { return gang.NewList(GroupKind) }

// NewGroup is an empty PodGroup.
func (Backend) NewGroup() client.Object { return gang.Empty(GroupKind) }

// Observe reads the PodGroup's phase: Pending is still waiting in its
// queue; Inqueue and later let pods be created.
func (Backend) Observe(obj client.Object) gang.State {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return gang.State{}
	}
	var st gang.State
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	switch phase {
	case "Inqueue":
		st.Admitted = true
	case "Running", "Completed":
		st.Admitted, st.Scheduled = true, new(true)
	default:
		st.Reason, st.Message = string(musterv1.ReasonGangQueued), "waiting for queue "+queueOf(u)+" to admit the PodGroup"
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Unschedulable" && m["status"] == "True" {
			msg, _ := m["message"].(string)
			st.Scheduled = new(false)
			if st.Admitted {
				st.Reason = string(musterv1.ReasonGangUnschedulable)
			}
			if msg != "" {
				st.Message = msg
			}
		}
	}
	return st
}

func queueOf(u *unstructured.Unstructured) string {
	q, _, _ := unstructured.NestedString(u.Object, "spec", "queue")
	return q
}
