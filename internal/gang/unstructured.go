package gang

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// NewObject makes an object of a scheduler's own API, whose Go types
// Muster does not import, named after the gang, labelled and owned by the
// job.
func NewObject(gvk schema.GroupVersionKind, job *musterv1.TrainingJob, g *Gang, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(g.Name)
	u.SetNamespace(g.Namespace)
	u.SetLabels(Labels(g))
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(job, musterv1.GroupVersion.WithKind("TrainingJob"))})
	return u
}

// NewList is an empty list of a scheduler's own kind.
func NewList(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// Empty is an empty object of a scheduler's own kind.
func Empty(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
