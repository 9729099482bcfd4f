package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A pod is the job's whatever version of the API its owner reference names:
// the pods an earlier operator made name v1alpha1, and after an upgrade the
// operator must still see them end.
func TestJobOwnerOfAnyVersion(t *testing.T) {
	cases := map[string]struct {
		ref  metav1.OwnerReference
		want bool
	}{
		"v1beta1":            {metav1.OwnerReference{APIVersion: "muster.dev/v1beta1", Kind: "TrainingJob", Controller: ptr.To(true)}, true},
		"v1alpha1":           {metav1.OwnerReference{APIVersion: "muster.dev/v1alpha1", Kind: "TrainingJob", Controller: ptr.To(true)}, true},
		"another group":      {metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "TrainingJob", Controller: ptr.To(true)}, false},
		"another kind":       {metav1.OwnerReference{APIVersion: "muster.dev/v1beta1", Kind: "Job", Controller: ptr.To(true)}, false},
		"not the controller": {metav1.OwnerReference{APIVersion: "muster.dev/v1beta1", Kind: "TrainingJob"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{tc.ref}}}
			if _, got := jobOwner(pod); got != tc.want {
				t.Errorf("jobOwner = %v, want %v", got, tc.want)
			}
		})
	}
}
