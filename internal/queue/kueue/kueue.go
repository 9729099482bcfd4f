// Package kueue puts TrainingJobs behind Kueue's quotas the way Kueue
// expects an externally managed job kind to: Muster makes one Kueue
// Workload per job, with one podSet per role, and runs the job only while
// Kueue has admitted that Workload. Kueue is told about the kind with
// integrations.externalFrameworks: ["TrainingJob.v1beta1.muster.dev"].
//
// Unlike Kueue's built-in integrations, which suspend the job through its
// spec and write the admitted flavors' node selectors into its pod
// templates, Muster never writes the user's spec: a job waiting for
// admission is held by the planner (status only), and the node selectors
// and tolerations of the admitted flavors are added to each pod as it is
// created.
package kueue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// LabelQueueName puts a job in a Kueue LocalQueue, as it does any job.
const LabelQueueName = "kueue.x-k8s.io/queue-name"

// ExternalFramework is the name Kueue's configuration lists the kind by.
const ExternalFramework = "TrainingJob.v1beta1.muster.dev"

// The Kueue kinds Muster reads and writes: kueue.x-k8s.io/v1beta2, the
// version Kueue stores since v0.15.
var (
	WorkloadKind       = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}
	ResourceFlavorKind = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "ResourceFlavor"}
)

// Workload condition types and reasons Muster reads or writes.
const (
	CondAdmitted      = "Admitted"
	CondQuotaReserved = "QuotaReserved"
	CondEvicted       = "Evicted"
	CondFinished      = "Finished"
	CondPodsReady     = "PodsReady"
	CondRequeued      = "Requeued"
)

// QueueName is the LocalQueue a job asks for, "" for none.
func QueueName(job *musterv1.TrainingJob) string { return job.Labels[LabelQueueName] }

// WorkloadName names a job's Workload: the kind and the job's name, and a
// hash of its UID so a job made again under the same name never finds
// the old one's.
func WorkloadName(job *musterv1.TrainingJob) string {
	sum := sha256.Sum256([]byte(job.UID))
	name := "trainingjob-" + job.Name
	if len(name) > 240 {
		name = name[:240]
	}
	return name + "-" + hex.EncodeToString(sum[:])[:5]
}

// Desired is the job's Workload: one podSet per role with a task to run,
// counted at the job's current size, each with the role's pod template,
// which Kueue reads the requests, node selectors and tolerations of. A
// scalable role's podSet carries its minReplicas as minCount, so Kueue may
// admit the job smaller when the quota is short (partial admission); the
// job then runs at the admitted size. An elastic job's (Elastic) carries
// AnnotationElasticJob instead. priority is the value of the job's
// PriorityClass, nil for none.
func Desired(job *musterv1.TrainingJob, priority *int32) (*unstructured.Unstructured, error) {
	eff := topology.Effective(job)
	var sets []any
	// A job-wide topology across several podSets makes them a group.
	group := podSets(eff, topology.Replicas) > 1
	for _, r := range eff.Spec.Roles {
		n := topology.Replicas(&r)
		if n == 0 {
			continue
		}
		tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r.Template)
		if err != nil {
			return nil, fmt.Errorf("role %s: %w", r.Name, err)
		}
		set := map[string]any{"name": r.Name, "count": int64(n), "template": tmpl}
		// Kueue admits an elastic job's slices whole, never partly.
		if topology.ScalingOf(job, r.Name) != nil && !Elastic(job) {
			if least := topology.MinReplicas(job, &r); least < n {
				set["minCount"] = int64(least)
			}
		}
		if req := topologyRequest(eff, &r, group); req != nil {
			set["topologyRequest"] = req
		}
		sets = append(sets, set)
	}
	spec := map[string]any{"queueName": QueueName(job), "podSets": sets}
	// Kueue wants a priority class's value beside its name.
	if pc := job.Spec.Scheduling.PriorityClassName; pc != "" && priority != nil {
		spec["priorityClassRef"] = map[string]any{"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pc}
		spec["priority"] = int64(*priority)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(WorkloadKind)
	u.SetName(WorkloadName(job))
	u.SetNamespace(job.Namespace)
	u.SetLabels(map[string]string{musterv1.LabelJobName: job.Name})
	if Elastic(job) {
		u.SetAnnotations(map[string]string{AnnotationElasticJob: "true"})
	}
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(job, musterv1.GroupVersion.WithKind("TrainingJob"))})
	return u, nil
}

// Counts are a Workload's podSets' counts by name.
func Counts(wl *unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	for _, s := range sets {
		m, _ := s.(map[string]any)
		name, _ := m["name"].(string)
		n, _ := m["count"].(int64)
		out[name] = n
	}
	return out
}

// Matches is whether an existing Workload still describes the job: the
// same queue, the same podSets and counts, the same resources per pod and
// the same topology requests.
// One that does not is replaced, which queues the job anew as it is now:
// a role's template edited to ask for more (8 GPUs a pod where Kueue
// admitted 1) would otherwise run its replacements and scale-ups outside
// the quota Kueue granted.
func Matches(have, want *unstructured.Unstructured) bool {
	hq, _, _ := unstructured.NestedString(have.Object, "spec", "queueName")
	wq, _, _ := unstructured.NestedString(want.Object, "spec", "queueName")
	return hq == wq && maps.Equal(Counts(have), Counts(want)) && maps.EqualFunc(podResources(have), podResources(want), sameResources) &&
		sameTopology(have, want)
}

// resources are what a pod of a podSet asks of the quota: each container's
// requests and limits, and the pod's overhead.
type resources struct {
	containers map[string]corev1.ResourceRequirements
	overhead   corev1.ResourceList
}

// podResources are the resources of each podSet's pods, by podSet name.
// A template that does not decode has none, and so matches no other.
func podResources(wl *unstructured.Unstructured) map[string]resources {
	out := map[string]resources{}
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	for _, s := range sets {
		m, _ := s.(map[string]any)
		name, _ := m["name"].(string)
		tmpl, _ := m["template"].(map[string]any)
		var pt corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pt); err != nil {
			continue
		}
		r := resources{containers: map[string]corev1.ResourceRequirements{}, overhead: pt.Spec.Overhead}
		for _, c := range slices.Concat(pt.Spec.InitContainers, pt.Spec.Containers) {
			r.containers[c.Name] = corev1.ResourceRequirements{Requests: c.Resources.Requests, Limits: c.Resources.Limits}
		}
		out[name] = r
	}
	return out
}

// sameResources compares quantities by value ("1" and "1000m" are alike),
// an empty list with none.
func sameResources(a, b resources) bool {
	return maps.EqualFunc(a.containers, b.containers, func(x, y corev1.ResourceRequirements) bool {
		return sameList(x.Requests, y.Requests) && sameList(x.Limits, y.Limits)
	}) && sameList(a.overhead, b.overhead)
}

func sameList(a, b corev1.ResourceList) bool {
	return maps.EqualFunc(a, b, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
}

// State is where a Workload stands with Kueue.
type State struct {
	// QuotaReserved and Admitted are Kueue's conditions; Evicted is true
	// while an eviction (preemption, a timeout, a deactivation) is being
	// carried out.
	QuotaReserved, Admitted, Evicted, Finished bool
	// FinishedAt is when the Workload was finished.
	FinishedAt time.Time
	// PodsReady is the job controller's own last word on its pods.
	PodsReady bool
	// ClusterQueue is the ClusterQueue that admitted the Workload.
	ClusterQueue string
	// Reason and Message say why the Workload waits or was evicted.
	Reason, Message string
	// Flavors are the ResourceFlavors assigned to each podSet.
	Flavors map[string][]string
	// Counts are the admitted counts of the podSets Kueue admitted with
	// fewer pods than asked (partial admission).
	Counts map[string]int32
	// Gates are the podSets Kueue placed by topology, whose pods it
	// places in their domains itself (tas.go).
	Gates map[string]*Gate
}

// Observe reads a Workload's status.
func Observe(wl *unstructured.Unstructured) State {
	var st State
	conds := conditions(wl)
	st.QuotaReserved = apimeta.IsStatusConditionTrue(conds, CondQuotaReserved)
	st.Admitted = apimeta.IsStatusConditionTrue(conds, CondAdmitted)
	if c := apimeta.FindStatusCondition(conds, CondFinished); c != nil && c.Status == metav1.ConditionTrue {
		st.Finished, st.FinishedAt = true, c.LastTransitionTime.Time
	}
	st.PodsReady = apimeta.IsStatusConditionTrue(conds, CondPodsReady)
	if c := apimeta.FindStatusCondition(conds, CondEvicted); c != nil && c.Status == metav1.ConditionTrue {
		st.Evicted, st.Reason, st.Message = true, c.Reason, c.Message
	} else if c := apimeta.FindStatusCondition(conds, CondQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
		st.Reason, st.Message = c.Reason, c.Message
	}
	st.ClusterQueue, _, _ = unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue")
	assignments, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	for _, a := range assignments {
		m, _ := a.(map[string]any)
		name, _ := m["name"].(string)
		if m["topologyAssignment"] != nil {
			if st.Gates == nil {
				st.Gates = map[string]*Gate{}
			}
			st.Gates[name] = &Gate{Workload: wl.GetName(), Annotations: placedAnnotations(podSet(sets, name))}
		}
		flavors, _ := m["flavors"].(map[string]any)
		var names []string
		for _, f := range flavors {
			if s, ok := f.(string); ok && !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
		slices.Sort(names)
		if st.Flavors == nil {
			st.Flavors = map[string][]string{}
		}
		st.Flavors[name] = names
		if n, ok := m["count"].(int64); ok && n < Counts(wl)[name] {
			if st.Counts == nil {
				st.Counts = map[string]int32{}
			}
			st.Counts[name] = int32(n)
		}
	}
	return st
}

// podSet is the podSet of that name, nil when there is none.
func podSet(sets []any, name string) map[string]any {
	for _, s := range sets {
		if m, _ := s.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

func conditions(wl *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	out := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// Placement is what an admitted role's pods get from their flavors, and
// the gate of a role Kueue placed by topology.
type Placement struct {
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	Gate         *Gate
}

// Placements are the node selectors and tolerations of each role's
// assigned flavors, as Kueue's own integrations inject them. flavors are
// the ResourceFlavors by name.
func Placements(st State, flavors map[string]*unstructured.Unstructured) (map[string]Placement, error) {
	out := map[string]Placement{}
	for role, names := range st.Flavors {
		p := Placement{NodeSelector: map[string]string{}}
		for _, name := range names {
			f, ok := flavors[name]
			if !ok {
				return nil, fmt.Errorf("ResourceFlavor %s of podSet %s not found", name, role)
			}
			labels, _, _ := unstructured.NestedStringMap(f.Object, "spec", "nodeLabels")
			maps.Copy(p.NodeSelector, labels)
			tols, _, _ := unstructured.NestedSlice(f.Object, "spec", "tolerations")
			for _, t := range tols {
				m, _ := t.(map[string]any)
				var tol corev1.Toleration
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tol); err != nil {
					return nil, fmt.Errorf("ResourceFlavor %s: %w", name, err)
				}
				p.Tolerations = append(p.Tolerations, tol)
			}
		}
		p.Gate = st.Gates[role]
		out[role] = p
	}
	return out, nil
}

// Place adds a role's placement to a pod: the flavor's node labels to its
// node selector and its tolerations, and the topology gate.
func Place(pod *corev1.Pod, p Placement) {
	if p.Gate != nil {
		gate(pod, pod.Labels[musterv1.LabelRole], p.Gate)
	}
	if len(p.NodeSelector) > 0 {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		maps.Copy(pod.Spec.NodeSelector, p.NodeSelector)
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, p.Tolerations...)
}

// Condition is a Workload condition as the job's controller writes it.
func Condition(t string, status bool, reason, message string, now metav1.Time) map[string]any {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	c := metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, LastTransitionTime: now}
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	return m
}
