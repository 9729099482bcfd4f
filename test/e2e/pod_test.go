package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/test/framework"
)

func TestPodExitsWithItsCode(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	createPod(g, pythonPod(ns, "ok", "print('done')"))
	createPod(g, pythonPod(ns, "fails", "import sys; print('failing on purpose'); sys.exit(3)"))

	ok := framework.WaitPodPhase(g, cs, ns, "ok", corev1.PodSucceeded, time.Minute)
	g.Expect(ok.Spec.NodeName).To(gomega.Equal("muster-procnode"))
	g.Expect(terminated(ok)).NotTo(gomega.BeNil(), framework.DescribePod(cs, ok))
	g.Expect(terminated(ok).ExitCode).To(gomega.BeZero())
	g.Expect(terminated(ok).Reason).To(gomega.Equal("Completed"))

	failed := framework.WaitPodPhase(g, cs, ns, "fails", corev1.PodFailed, time.Minute)
	g.Expect(terminated(failed)).NotTo(gomega.BeNil(), framework.DescribePod(cs, failed))
	g.Expect(terminated(failed).ExitCode).To(gomega.BeEquivalentTo(3))
	g.Expect(terminated(failed).Reason).To(gomega.Equal("Error"))
}

func TestLogsThroughTheAPIServer(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	script := `import sys, time
print("to-stdout-1")
print("to-stderr-2", file=sys.stderr)
# stdout and stderr are separate pipes, read concurrently as by a kubelet:
# a pause keeps the last line last.
time.sleep(0.5)
print("still-running")
time.sleep(600)`
	createPod(g, pythonPod(ns, "talker", script))
	framework.WaitPodRunning(g, cs, ns, "talker", time.Minute)

	// While it runs, as kubectl logs would show it (both streams).
	g.Eventually(func() (string, error) { return framework.PodLog(cs, ns, "talker", "main") }, 30*time.Second, 250*time.Millisecond).
		Should(gomega.And(gomega.ContainSubstring("to-stdout-1"), gomega.ContainSubstring("to-stderr-2"), gomega.ContainSubstring("still-running")))

	// A limited tail, through the same kubelet endpoint.
	tail, err := cs.CoreV1().Pods(ns).GetLogs("talker", &corev1.PodLogOptions{TailLines: ptr.To[int64](1)}).Do(context.Background()).Raw()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(strings.TrimSpace(string(tail))).To(gomega.Equal("still-running"))
}

func TestGracefulDeletion(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	marker := filepath.Join(hostDir, ns+"-terminated")
	// The process traps SIGTERM, takes a moment to "save its work", writes
	// a marker on a host path and exits 0.
	script := `import signal, sys, time
def term(*_):
    time.sleep(2)
    open("/host/` + filepath.Base(marker) + `", "w").write("SIGTERM handled")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
print("waiting", flush=True)
while True:
    time.sleep(1)`
	pod := pythonPod(ns, "graceful", script)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: ptr.To(corev1.HostPathDirectory)}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
	createPod(g, pod)
	framework.WaitPodRunning(g, cs, ns, "graceful", time.Minute)
	g.Eventually(func() (string, error) { return framework.PodLog(cs, ns, "graceful", "main") }, 30*time.Second, 250*time.Millisecond).
		Should(gomega.ContainSubstring("waiting"))

	start := time.Now()
	g.Expect(cs.CoreV1().Pods(ns).Delete(context.Background(), "graceful", metav1.DeleteOptions{})).To(gomega.Succeed())
	// Gone once the process exited on its own: well within the 30s grace,
	// so it was SIGTERM, not the SIGKILL at the end of the grace period.
	g.Eventually(framework.PodGone(cs, ns, "graceful"), 25*time.Second, 200*time.Millisecond).Should(gomega.BeTrue())
	g.Expect(time.Since(start)).To(gomega.BeNumerically(">=", 2*time.Second), "gone before the handler finished")
	data, err := os.ReadFile(marker)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "the SIGTERM handler did not run")
	g.Expect(string(data)).To(gomega.Equal("SIGTERM handled"))
}
