package importer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/queue/kueue"
)

// serverSet are metadata fields the API server wrote for the original
// object; they mean nothing for a new one.
var serverSet = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "selfLink"}

// metadata carries over the name, namespace, labels and annotations.
// Annotations of the source system itself drive features of that system
// and are dropped.
func metadata(s *source, ownPrefixes []string) (metav1.ObjectMeta, error) {
	m := path{"metadata"}
	meta := metav1.ObjectMeta{Name: s.str(m.child("name")), Namespace: s.str(m.child("namespace"))}
	if meta.Name == "" {
		return meta, fmt.Errorf("metadata.name is required: a TrainingJob's name names its pods and Service")
	}
	for _, k := range serverSet {
		s.drop(m.child(k), "set by the API server for the original object")
	}
	s.drop(m.child("ownerReferences"), "belongs to the original object: the TrainingJob is owned by nothing")
	s.drop(m.child("finalizers"), "belongs to the original object's controller")
	s.drop(m.child("generateName"), "the TrainingJob keeps metadata.name")
	for _, k := range s.keys(m.child("labels")) {
		meta.Labels = setKey(meta.Labels, k, s.str(m.child("labels", k)))
	}
	for _, k := range s.keys(m.child("annotations")) {
		p := m.child("annotations", k)
		switch {
		case k == corev1.LastAppliedConfigAnnotation:
			s.drop(p, "kubectl's record of the original object")
		case hasAnyPrefix(k, ownPrefixes):
			s.drop(p, "an annotation that drives a feature of the source system, which Muster does not have")
		default:
			meta.Annotations = setKey(meta.Annotations, k, s.str(p))
		}
	}
	s.seen(m.child("labels"))
	s.seen(m.child("annotations"))
	s.seen(m)
	return meta, nil
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// checkNames refuses names the CRD would: a job name and role names that
// are DNS-1035 labels, together short enough for every pod name.
func checkNames(job *musterv1.TrainingJob) field.ErrorList {
	var errs field.ErrorList
	if msgs := utilvalidation.IsDNS1035Label(job.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name,
			"a TrainingJob name must be a DNS-1035 label (it names the job's Service): "+strings.Join(msgs, ", ")))
	}
	for i, r := range job.Spec.Roles {
		p := field.NewPath("spec", "roles").Index(i).Child("name")
		if msgs := utilvalidation.IsDNS1035Label(r.Name); len(msgs) > 0 || len(r.Name) > 40 {
			errs = append(errs, field.Invalid(p, r.Name, "a role name must be a DNS-1035 label of at most 40 characters"))
		}
		if len(job.Name)+len(r.Name) > 56 {
			errs = append(errs, field.Invalid(p, r.Name, fmt.Sprintf(
				"the job's and the role's names together must be at most 56 characters (pod names <job>-<role>-<index>), are %d", len(job.Name)+len(r.Name))))
		}
	}
	return errs
}

// template decodes the pod template at p. The template's own
// restartPolicy is left to the caller, which has read it already: in
// Muster the operator, not the kubelet, restarts tasks, so the pod's is
// always Never.
func template(s *source, p path) (corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	if !s.has(p) {
		return t, fmt.Errorf("%s: a pod template is required", p)
	}
	if err := s.decode(p, &t); err != nil {
		return t, err
	}
	t.Spec.RestartPolicy = ""
	return t, nil
}

// orderRoles puts every role after the roles it depends on, keeping the
// source's order otherwise: Muster lets a role depend only on earlier
// roles, so that there is never a cycle.
func orderRoles(roles []musterv1.Role) ([]musterv1.Role, error) {
	placed := map[string]bool{}
	var out []musterv1.Role
	for len(out) < len(roles) {
		progress := false
		for _, r := range roles {
			if placed[r.Name] {
				continue
			}
			ready := true
			for _, d := range r.DependsOn {
				ready = ready && placed[d.Role]
			}
			if ready {
				out = append(out, r)
				placed[r.Name] = true
				progress = true
			}
		}
		if !progress {
			return nil, fmt.Errorf("the roles' dependencies form a cycle")
		}
	}
	return out, nil
}

// setRestartScopes writes every role's restartScope, what a restart its
// restartPolicy decides restarts, as the source system restarts: the task
// alone in an elastic role, whose world survives a lost member; the whole
// job where the tasks learn their peers once (any runtime but a Volcano
// Job's wiring: static PyTorch, TensorFlow, PaddlePaddle, MPI, JAX) and in
// a gang, whose lone replacement would not be placed as part of it; the
// task alone otherwise, where tasks do not depend on each other
// (FrameworkController's task roles, a Volcano Job's tasks without a gang,
// a TrainJob's generic Jobs). A job that names no gang backend is taken
// as one without a gang: the source system replaced its pods one by one.
func setRestartScopes(spec *musterv1.TrainingJobSpec) {
	for i := range spec.Roles {
		spec.Roles[i].RestartScope = spec.ShapeRestartScope(spec.Roles[i].Name)
	}
}

func ptr[T any](v T) *T { return &v }

// lowerRole is a replica type as a role name: Master is master.
func lowerRole(t string) string { return strings.ToLower(t) }

// roleTemplate reads a role's pod template, and Kueue's topology request
// on it (the podSet annotations Kueue's integrations read from a pod
// template) as the role's topology.
func roleTemplate(s *source, p path, r *musterv1.Role) error {
	t, err := template(s, p)
	if err != nil {
		return err
	}
	if topo := takeTopology(s, p, &t); topo != nil {
		r.Topology = *topo
	}
	r.Template = t
	return nil
}

// kueuePodSetAnnotations are Kueue's podSet annotations Muster has no
// counterpart for; on a pod a few would mark it as placed by Kueue's
// topology-aware scheduling, which Muster decides itself.
var kueuePodSetAnnotations = map[string]string{
	kueue.AnnotationUnconstrainedTopology:           "a role without a topology is placed as its flavor says: unconstrained where the flavor has a Topology",
	"kueue.x-k8s.io/podset-slice-required-topology": "Muster asks Kueue for no slices of a role",
	"kueue.x-k8s.io/podset-slice-size":              "Muster asks Kueue for no slices of a role",
	"kueue.x-k8s.io/podset-group-name":              "a job-wide spec.scheduling.topology groups a job's two roles",
}

// takeTopology takes Kueue's required (else preferred) topology
// annotation out of a pod template as a topology request, and its other
// podSet annotations, reported.
func takeTopology(s *source, p path, t *corev1.PodTemplateSpec) *musterv1.Topology {
	ann := p.child("metadata", "annotations")
	var topo *musterv1.Topology
	for _, a := range []struct {
		key  string
		mode musterv1.TopologyMode
	}{{kueue.AnnotationRequiredTopology, musterv1.TopologyRequired}, {kueue.AnnotationPreferredTopology, musterv1.TopologyPreferred}} {
		level, ok := t.Annotations[a.key]
		if !ok {
			continue
		}
		delete(t.Annotations, a.key)
		if topo != nil {
			s.drop(ann.child(a.key), "Kueue takes a required or a preferred topology, not both: the required one is kept")
			continue
		}
		topo = &musterv1.Topology{Level: level, Mode: a.mode}
		s.note(ann.child(a.key), "becomes the role's topology ("+string(a.mode)+"), which Muster asks Kueue for")
	}
	for _, key := range slices.Sorted(maps.Keys(kueuePodSetAnnotations)) {
		if _, ok := t.Annotations[key]; ok {
			delete(t.Annotations, key)
			s.drop(ann.child(key), kueuePodSetAnnotations[key])
		}
	}
	if len(t.Annotations) == 0 {
		t.Annotations = nil
	}
	return topo
}
