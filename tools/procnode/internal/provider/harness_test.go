package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/tools/procnode/internal/ipam"
	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
	"github.com/muster-dev/muster/tools/procnode/internal/proc"
)

// testNode runs pods for real without an API server: their containers run
// the host's sh through the shim, in host-network pods unless the node has
// a pod network. It records every status the node reports, in order. Needs
// root.
type testNode struct {
	t   *testing.T
	p   *Provider
	mu  sync.Mutex
	obs []*corev1.Pod
}

type nodeOption func(*Config)

// withBackoff sets the first crash-loop back-off.
func withBackoff(d time.Duration) nodeOption { return func(c *Config) { c.RestartBackoff = d } }

// withPodNetwork gives the node a pod network of its own (a bridge
// namespace), so pods without hostNetwork get a namespace and an address.
func withPodNetwork(t *testing.T) nodeOption {
	return func(c *Config) {
		alloc, err := ipam.New("10.213.7.0/24")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = netsetup.Cleanup(c.NodeName)
		network, err := netsetup.NewNetwork(c.NodeName, alloc.Prefix(), alloc.Gateway())
		if err != nil {
			t.Fatalf("pod network: %v", err)
		}
		t.Cleanup(func() {
			_ = network.Close()
			_, _ = netsetup.Cleanup(c.NodeName)
		})
		c.Network, c.IPAM = network, alloc
	}
}

func newTestNode(t *testing.T, opts ...nodeOption) *testNode {
	t.Helper()
	requireRoot(t)
	if err := proc.InitReaper(); err != nil {
		t.Fatal(err)
	}
	shimPath, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		NodeName: fmt.Sprintf("t%d", os.Getpid()%100000), StateDir: t.TempDir(), ShimPath: shimPath,
		APIServer: "127.0.0.1:6443", RestartBackoff: 300 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	n := &testNode{t: t, p: New(cfg)}
	n.p.observe = func(pod *corev1.Pod) {
		n.mu.Lock()
		n.obs = append(n.obs, pod)
		n.mu.Unlock()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n.p.Shutdown(ctx)
	})
	return n
}

// start runs pod on the node.
func (n *testNode) start(pod *corev1.Pod) {
	n.t.Helper()
	if err := n.p.CreatePod(context.Background(), pod); err != nil {
		n.t.Fatal(err)
	}
}

// history returns the statuses reported so far.
func (n *testNode) history() []*corev1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*corev1.Pod(nil), n.obs...)
}

// await waits until a status reported at or after index from satisfies
// ok, and returns its index and the pod.
func (n *testNode) await(from int, what string, ok func(*corev1.Pod) bool) (int, *corev1.Pod) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := n.history()
		for i := from; i < len(h); i++ {
			if ok(h[i]) {
				return i, h[i]
			}
		}
		if time.Now().After(deadline) {
			last := "nothing reported"
			if len(h) > 0 {
				last = describe(h[len(h)-1])
			}
			n.t.Fatalf("timed out waiting for %s; last status:\n%s", what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dataDir is where the pod's emptyDir "data" lives on the host.
func (n *testNode) dataDir(pod *corev1.Pod) string {
	return filepath.Join(podDir(n.p.cfg.StateDir, pod), "volumes", "data")
}

// readData reads a file the pod's containers wrote to /data.
func (n *testNode) readData(pod *corev1.Pod, name string) string {
	b, _ := os.ReadFile(filepath.Join(n.dataDir(pod), name))
	return string(b)
}

// awaitData waits until the file the pod's containers write to /data
// satisfies ok, and returns its content.
func (n *testNode) awaitData(pod *corev1.Pod, name string, ok func(string) bool) string {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := n.readData(pod, name)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("timed out waiting for /data/%s, which holds %q", name, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testPod is a pod of sh containers sharing an emptyDir "data" at /data,
// in the host's network unless net is set.
func testPod(name string, policy corev1.RestartPolicy, inits, mains []corev1.Container) *corev1.Pod {
	grace := int64(2)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
		Spec: corev1.PodSpec{
			HostNetwork: true, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
			InitContainers: inits, Containers: mains,
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// sh is a container running script with /data mounted.
func sh(name, script string) corev1.Container {
	return corev1.Container{
		Name: name, Image: "busybox", Command: []string{"sh", "-c", script},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
}

// withPolicy sets a container's own restartPolicy and rules.
func withPolicy(c corev1.Container, p corev1.ContainerRestartPolicy, rules ...corev1.ContainerRestartRule) corev1.Container {
	c.RestartPolicy = &p
	c.RestartPolicyRules = rules
	return c
}

func rule(action corev1.ContainerRestartRuleAction, op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) corev1.ContainerRestartRule {
	return corev1.ContainerRestartRule{Action: action, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

// status returns the status of the named (init or app) container.
func status(pod *corev1.Pod, name string) corev1.ContainerStatus {
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

func running(pod *corev1.Pod, name string) bool { return status(pod, name).State.Running != nil }

func terminated(pod *corev1.Pod, name string) *corev1.ContainerStateTerminated {
	return status(pod, name).State.Terminated
}

func waitingReason(pod *corev1.Pod, name string) string {
	if w := status(pod, name).State.Waiting; w != nil {
		return w.Reason
	}
	return ""
}

// describe renders a status for failure messages.
func describe(pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s\n", pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, "  %s: restarts %d ready %v state %s last %s\n", s.Name, s.RestartCount, s.Ready, stateString(s.State), stateString(s.LastTerminationState))
	}
	return b.String()
}

func stateString(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "Running"
	case s.Terminated != nil:
		return fmt.Sprintf("Terminated(%d %s %q)", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	case s.Waiting != nil:
		return fmt.Sprintf("Waiting(%s)", s.Waiting.Reason)
	}
	return "-"
}

// superviseAlone runs c as the only supervised container of its pod, in a
// round of its own.
func superviseAlone(r *podRun, c *ctr) {
	rd := r.newRound(true)
	sv, _ := r.enroll(rd, c)
	r.supervise(c, sv)
}
