package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func TestPodJobIsTheJobItsLabelNames(t *testing.T) {
	labelled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{musterv1.LabelJobName: "mnist"}}}
	if got := podJob(labelled); len(got) != 1 || got[0] != "mnist" {
		t.Errorf("podJob(a pod of job mnist) = %v, want [mnist]", got)
	}
	if got := podJob(&corev1.Pod{}); got != nil {
		t.Errorf("podJob(a pod of no job) = %v, want none", got)
	}
}
