// Package v1alpha1 holds the first TrainingJob API of the muster.dev group,
// still served and converted to v1beta1, the version the cluster stores
// (conversion.go).
//
// +kubebuilder:object:generate=true
// +groupName=muster.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "muster.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// localSchemeBuilder is where the generated conversions register.
	localSchemeBuilder = &SchemeBuilder
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &TrainingJob{}, &TrainingJobList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
