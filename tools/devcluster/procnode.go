package devcluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func (c *Config) procNodeStateDir() string { return c.path("procnode") }

// procNodeArgs is the process node's flag contract (tools/procnode). It
// pulls images from the local registry (registry.go).
func (c *Config) procNodeArgs() []string {
	args := []string{
		"--kubeconfig=" + c.componentKubeconfig("procnode"),
		"--node-name=" + ProcNodeName,
		"--state-dir=" + c.procNodeStateDir(),
		"--pod-cidr=" + PodCIDR,
		fmt.Sprintf("--apiserver=127.0.0.1:%d", c.Ports.APIServer),
		fmt.Sprintf("--dns=127.0.0.1:%d", c.Ports.DNS),
		fmt.Sprintf("--listen=127.0.0.1:%d", c.Ports.ProcNode),
		"--registry-mirror=" + c.RegistryAddr(),
		"--egress-socket=" + c.egressSocket(),
	}
	return args
}

func (c *Config) egressConfigFile() string { return c.path("egress-selector.yaml") }

// egressSocket is the unix socket of the process node's egress proxy.
func (c *Config) egressSocket() string { return c.path("procnode-egress.sock") }

// egressConfig sends the API server's cluster traffic (webhooks, the
// kubelet API) through the process node's HTTP CONNECT proxy, on a unix
// socket only root reaches.
func (c *Config) egressConfig() string {
	return fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, c.egressSocket())
}

func (c *Config) procNodeComponent(bin string) component {
	return component{
		name:   "procnode",
		bin:    bin,
		args:   c.procNodeArgs(),
		addr:   fmt.Sprintf("127.0.0.1:%d, node %s, pods %s", c.Ports.ProcNode, ProcNodeName, PodCIDR),
		listen: []listenAddr{tcp(c.Ports.ProcNode)},
		ready: func(ctx context.Context) error {
			cs, err := c.clientset()
			if err != nil {
				return err
			}
			return nodeReady(ctx, cs, ProcNodeName)
		},
	}
}

// cleanupProcNode asks the process node to remove what it leaves on the
// host (network namespaces, the bridge, pod processes).
func (c *Config) cleanupProcNode(ctx context.Context) error {
	bins, err := c.clusterBinaries()
	if err != nil {
		return fmt.Errorf("cannot clean up after the process node: %w", err)
	}
	if bins.ProcNode == "" || !isExecutable(bins.ProcNode) {
		return fmt.Errorf("cannot clean up after the process node: %s is not built", bins.ProcNode)
	}
	t := time.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.ProcNode, append(c.procNodeArgs(), "--cleanup")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s --cleanup: %w\n%s", filepath.Base(bins.ProcNode), err, out)
	}
	c.logf("%-24s cleaned up in %s", "procnode network", since(t))
	return nil
}

func nodeReady(ctx context.Context, cs kubernetes.Interface, name string) error {
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s not ready: %s", name, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}
