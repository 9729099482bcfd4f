package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/test/framework"
)

// cgroupLimits prints the CPU quota and memory limit of the cgroup the
// script runs in, through cgroup v2 or v1, whichever the node uses.
const cgroupLimits = `
paths = dict(l.strip().split(":", 2)[1:] for l in open("/proc/self/cgroup"))
def read(p):
    return open(p).read().strip()
if "" in paths and paths[""] != "/":
    d = "/sys/fs/cgroup" + paths[""]
    print("cpu", read(d + "/cpu.max").split()[0], "memory", read(d + "/memory.max"))
else:
    print("cpu", read("/sys/fs/cgroup/cpu" + paths["cpu"] + "/cpu.cfs_quota_us"),
          "memory", read("/sys/fs/cgroup/memory" + paths["memory"] + "/memory.limit_in_bytes"))
`

// The process node runs each container in a cgroup limited by its
// resources, so a runaway pod cannot starve the control plane beside it:
// the limits are the container's, and going over limits.memory ends the
// container as OOMKilled, as on a real node.
func TestContainersAreLimitedByTheirResources(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}

	limited := pythonPod(ns, "limited", cgroupLimits)
	limited.Spec.Containers[0].Resources.Limits = limits
	createPod(g, limited)
	hog := pythonPod(ns, "hog", "x = bytearray(512 << 20)\nprint('allocated')")
	hog.Spec.Containers[0].Resources.Limits = limits
	createPod(g, hog)

	framework.WaitPodPhase(g, cs, ns, "limited", corev1.PodSucceeded, time.Minute)
	out, err := framework.PodLog(cs, ns, "limited", "main")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("cpu 20000 memory 67108864"))

	got := framework.WaitPodPhase(g, cs, ns, "hog", corev1.PodFailed, time.Minute)
	g.Expect(terminated(got)).NotTo(gomega.BeNil(), framework.DescribePod(cs, got))
	g.Expect(terminated(got).ExitCode).To(gomega.BeEquivalentTo(137))
	g.Expect(terminated(got).Reason).To(gomega.Equal("OOMKilled"))
}

// A container gets the runtime's default capabilities (containerd's and
// Docker's set, but MKNOD, which no device cgroup bounds on the process
// node), what securityContext adds, and all of them only when privileged.
func TestContainersKeepOnlyTheCapabilitiesTheyAskFor(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	bounding := `print([l.split()[1] for l in open("/proc/self/status") if l.startswith("CapBnd")][0])`

	createPod(g, pythonPod(ns, "default", bounding))
	added := pythonPod(ns, "added", bounding)
	added.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
		Add: []corev1.Capability{"SYS_PTRACE"}, Drop: []corev1.Capability{"NET_RAW"},
	}}
	createPod(g, added)
	privileged := pythonPod(ns, "privileged", bounding)
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	createPod(g, privileged)

	want := map[string]string{
		// containerd's default set without MKNOD (bit 27)
		"default": "00000000a00425fb",
		// + SYS_PTRACE (bit 19), - NET_RAW (bit 13)
		"added": "00000000a00c05fb",
	}
	for name, mask := range want {
		framework.WaitPodPhase(g, cs, ns, name, corev1.PodSucceeded, time.Minute)
		out, err := framework.PodLog(cs, ns, name, "main")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(strings.TrimSpace(out)).To(gomega.Equal(mask), name)
	}
	framework.WaitPodPhase(g, cs, ns, "privileged", corev1.PodSucceeded, time.Minute)
	out, err := framework.PodLog(cs, ns, "privileged", "main")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal(hostBoundingSet(g)), "a privileged container keeps every capability the node has")
}

// hostBoundingSet is the capability bounding set of this test, which runs
// on the node's host as the node does.
func hostBoundingSet(g gomega.Gomega) string {
	status, err := os.ReadFile("/proc/self/status")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "CapBnd:"); ok {
			return strings.TrimSpace(v)
		}
	}
	g.Expect("CapBnd").To(gomega.BeEmpty(), "no CapBnd in /proc/self/status")
	return ""
}
