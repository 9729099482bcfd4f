// Package v1beta1 holds the TrainingJob API of the muster.dev group: the
// version the cluster stores, and the one the operator works in. Objects
// of v1alpha1 are converted to it (api/v1alpha1/conversion.go).
//
// +kubebuilder:object:generate=true
// +groupName=muster.dev
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "muster.dev", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &TrainingJob{}, &TrainingJobList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
