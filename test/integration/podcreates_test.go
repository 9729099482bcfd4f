package integration

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/controller"
)

// The operator's client (the manager's NewClient, in the binary and in
// these tests) has its pod creates answered with the pod's metadata alone:
// the pod it sent then holds what the API server decided (its UID,
// resource version, creation time), its spec stays as sent, a refusal is
// still the API server's error, and other kinds go through as before.
func TestPodCreatesAreAnsweredWithMetadata(t *testing.T) {
	e := newEnv(t)
	c, err := controller.NewClient(cfg, client.Options{Scheme: scheme})
	e.g.Expect(err).NotTo(gomega.HaveOccurred())

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "made", Namespace: e.ns, Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	e.g.Expect(c.Create(e.ctx(), pod)).To(gomega.Succeed())
	stored := &corev1.Pod{}
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(pod), stored)).To(gomega.Succeed())
	e.g.Expect(pod.UID).To(gomega.Equal(stored.UID))
	e.g.Expect(pod.ResourceVersion).To(gomega.Equal(stored.ResourceVersion))
	e.g.Expect(pod.CreationTimestamp).To(gomega.Equal(stored.CreationTimestamp))
	e.g.Expect(pod.Labels).To(gomega.Equal(map[string]string{"a": "b"}))
	e.g.Expect(pod.Spec.Containers[0].TerminationMessagePath).To(gomega.BeEmpty(), "the spec is as sent, without the server's defaults")
	e.g.Expect(stored.Spec.Containers[0].TerminationMessagePath).NotTo(gomega.BeEmpty())

	again := pod.DeepCopy()
	again.ObjectMeta = metav1.ObjectMeta{Name: "made", Namespace: e.ns}
	e.g.Expect(apierrors.IsAlreadyExists(c.Create(e.ctx(), again))).To(gomega.BeTrue())
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name", Namespace: e.ns}, Spec: pod.Spec}
	e.g.Expect(apierrors.IsInvalid(c.Create(e.ctx(), bad))).To(gomega.BeTrue())

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: e.ns}, Data: map[string]string{"k": "v"}}
	e.g.Expect(c.Create(e.ctx(), cm)).To(gomega.Succeed())
	e.g.Expect(cm.Data).To(gomega.Equal(map[string]string{"k": "v"}))
	e.g.Expect(cm.UID).NotTo(gomega.BeEmpty())
}
