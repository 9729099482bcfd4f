package e2e

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

// Pods that tolerate the fake nodes' taint land on KWOK nodes with GPUs
// and finish as their annotations say, without running anything.
func TestFakeGPUNodes(t *testing.T) {
	fakeNodes.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	fakePod := func(name, exitCode string) *corev1.Pod {
		pod := pythonPod(ns, name, "raise SystemExit('a fake node must not run this')")
		pod.Annotations = map[string]string{
			devcluster.KWOKCompleteDelayAnnotation: "2s",
			devcluster.KWOKExitCodeAnnotation:      exitCode,
		}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: devcluster.FakeNodeTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{devcluster.GPUResource: resource.MustParse("8")}
		return pod
	}
	createPod(g, fakePod("trainer", "0"))
	createPod(g, fakePod("crasher", "137"))

	start := time.Now()
	done := framework.WaitPodPhase(g, cs, ns, "trainer", corev1.PodSucceeded, 30*time.Second)
	g.Expect(time.Since(start)).To(gomega.BeNumerically(">=", 2*time.Second), "finished before its delay")
	g.Expect(done.Spec.NodeName).To(gomega.HavePrefix("kwok-node-"))
	failed := framework.WaitPodPhase(g, cs, ns, "crasher", corev1.PodFailed, 30*time.Second)
	g.Expect(terminated(failed)).NotTo(gomega.BeNil())
	g.Expect(terminated(failed).ExitCode).To(gomega.BeEquivalentTo(137))
	// One pod per node: each takes all 8 GPUs of one.
	g.Expect(failed.Spec.NodeName).NotTo(gomega.Equal(done.Spec.NodeName))
}
