package integration

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/plan/objects"
)

// A pod readied to restart in place is one the API server of the Kubernetes
// version Muster targets takes as it is: restart rules on a native sidecar
// and RestartAllContainers are kept, not dropped as a disabled feature's
// fields would be.
func TestTheAPIServerTakesAPodReadiedToRestartInPlace(t *testing.T) {
	e := newEnv(t)
	job := e.job("ip").Role("w", 1).Obj()
	job.UID = "00000000-0000-0000-0000-000000000001"
	pod, err := objects.DesiredPod(job, &job.Spec.Roles[0], 0, 1)
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	// Made by hand, not by the operator: no owner to collect it.
	pod.OwnerReferences, pod.Finalizers = nil, nil
	objects.ApplyInPlace(pod, objects.InPlace{WatcherImage: "muster-operator:test", Final: []int32{127, 210}})
	e.g.Expect(k8s.Create(e.ctx(), pod)).To(gomega.Succeed())

	var got corev1.Pod
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(pod), &got)).To(gomega.Succeed())
	watcher := got.Spec.InitContainers[0]
	e.g.Expect(watcher.Name).To(gomega.Equal(objects.RestartWatcherName))
	e.g.Expect(watcher.RestartPolicyRules).To(gomega.Equal(pod.Spec.InitContainers[0].RestartPolicyRules))
	e.g.Expect(watcher.RestartPolicyRules).To(gomega.HaveLen(1))
	e.g.Expect(watcher.RestartPolicyRules[0].Action).To(gomega.Equal(corev1.ContainerRestartRuleActionRestartAllContainers))
	e.g.Expect(got.Spec.Containers[0].RestartPolicyRules).To(gomega.Equal(pod.Spec.Containers[0].RestartPolicyRules))
	e.g.Expect(got.Spec.Containers[0].RestartPolicyRules).To(gomega.HaveLen(1))
}
