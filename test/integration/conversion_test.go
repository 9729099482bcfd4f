package integration

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/muster-dev/muster/api/v1alpha1"
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A job written as v1alpha1 is stored as v1beta1 through the operator's
// conversion webhook, reads back the same in either version, and runs: the
// operator sees what v1alpha1 meant (suspended, its restart scope), and a
// change made through v1alpha1 reaches it.
func TestV1alpha1JobsAreConvertedBothWays(t *testing.T) {
	e := newEnv(t)
	old := &v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: e.ns},
		Spec: v1alpha1.TrainingJobSpec{
			Roles: []v1alpha1.Role{{Name: "worker", Replicas: ptr.To[int32](2), RestartPolicy: v1alpha1.RestartPolicyOnFailure,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}},
			FailurePolicy: v1alpha1.FailurePolicy{
				Retry: &v1alpha1.RetryPolicy{MaxRetries: ptr.To[int32](2)},
				Rules: []v1alpha1.FailureRule{{OnExitCodes: v1alpha1.ExitCodeMatch{Operator: v1alpha1.ExitCodeIn, Values: []int32{3}}, Action: v1alpha1.ActionTerminateJob}},
			},
			Run: v1alpha1.RunPolicy{Suspend: ptr.To(true)},
		},
	}
	e.g.Expect(k8s.Create(e.ctx(), old)).To(gomega.Succeed())

	job := e.get("old")
	e.g.Expect(job.Spec.Run.Execution).To(gomega.Equal(musterv1.ExecutionSuspend))
	e.g.Expect(job.Spec.Roles[0].RestartScope).To(gomega.Equal(musterv1.RestartScopeTask), "a generic job's tasks restarted alone in v1alpha1")
	e.g.Expect(job.Spec.FailurePolicy.Retry.Policy).To(gomega.Equal(musterv1.RetryOnFailure))
	e.g.Expect(job.Spec.FailurePolicy.Rules[0].Action).To(gomega.Equal(musterv1.ActionFailJob))
	e.waitPhase("old", musterv1.PhaseSuspended)
	e.g.Consistently(func() []corev1.Pod { return e.pods("old") }, "1s", interval).Should(gomega.BeEmpty(), "a suspended job has no pods")

	// Read back as v1alpha1: what was written, the values v1beta1 cannot
	// hold included.
	back := &v1alpha1.TrainingJob{}
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(old), back)).To(gomega.Succeed())
	e.g.Expect(back.Spec.Run.Suspend).To(gomega.Equal(ptr.To(true)))
	e.g.Expect(back.Spec.FailurePolicy.Retry.MaxRetries).To(gomega.Equal(ptr.To[int32](2)))
	e.g.Expect(back.Spec.FailurePolicy.Rules[0].Action).To(gomega.Equal(v1alpha1.ActionTerminateJob))
	e.g.Expect(back.Annotations).NotTo(gomega.HaveKey(v1alpha1.AnnotationV1alpha1Fields), "the conversion's annotation is its own")

	// A change made through v1alpha1 resumes the job.
	patch := client.MergeFrom(back.DeepCopy())
	back.Spec.Run.Suspend = ptr.To(false)
	e.g.Expect(k8s.Patch(e.ctx(), back, patch)).To(gomega.Succeed())
	e.g.Expect(e.get("old").Spec.Run.Execution).NotTo(gomega.Equal(musterv1.ExecutionSuspend))
	e.waitPodCount("old", 2)
}

// Jobs stored while v1alpha1 was the storage version are rewritten in
// v1beta1 when the operator starts, and the CRD then records v1beta1 as
// the only stored version: what lets a later release stop serving
// v1alpha1.
func TestStoredJobsAreMigrated(t *testing.T) {
	e := newEnv(t)
	setStorage := func(version string) {
		t.Helper()
		// The operator may be writing the CRD's status meanwhile.
		e.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			if err := k8s.Get(e.ctx(), client.ObjectKey{Name: "trainingjobs.muster.dev"}, crd); err != nil {
				return err
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			for _, v := range versions {
				v.(map[string]any)["storage"] = v.(map[string]any)["name"] == version
			}
			if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
				return err
			}
			return k8s.Update(e.ctx(), crd)
		})).To(gomega.Succeed())
	}
	storedVersions := func() []string {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		e.g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Name: "trainingjobs.muster.dev"}, crd)).To(gomega.Succeed())
		v, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
		return v
	}
	setStorage("v1alpha1")
	defer setStorage("v1beta1")
	// A suspended job: nothing writes it after it is created, so only the
	// migration can rewrite it.
	e.create(e.job("stored").Role("worker", 1).Suspend(true).Obj())
	e.waitPhase("stored", musterv1.PhaseSuspended)
	before := e.get("stored").ResourceVersion
	e.g.Consistently(func() string { return e.get("stored").ResourceVersion }, "1s", interval).Should(gomega.Equal(before), "nothing else writes the job")
	setStorage("v1beta1")
	e.g.Eventually(storedVersions, timeout, interval).Should(gomega.ConsistOf("v1alpha1", "v1beta1"))

	operator.stop()
	op, err := startOperator()
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	operator = op
	e.g.Eventually(storedVersions, timeout, interval).Should(gomega.Equal([]string{"v1beta1"}))
	e.g.Expect(e.get("stored").ResourceVersion).NotTo(gomega.Equal(before), "the job stored as v1alpha1 was written again")
}
