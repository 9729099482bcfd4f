package devcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status prints each component (running or not, pid, address) and, when
// the API server answers, the nodes. It reads only the state dir and the
// cluster, so it works outside a checkout.
func Status(ctx context.Context, c *Config, w io.Writer) error {
	// Only the components' addresses are shown, which do not depend on
	// their binaries.
	comps := map[string]component{}
	for _, comp := range append([]component{
		c.etcdComponent(""), c.apiServerComponent(""), c.controllerManagerComponent(""), c.schedulerComponent(""),
		c.dnsComponent(""), c.registryComponent(""), c.procNodeComponent(""), c.kwokComponent(""),
	}, c.extraComponents()...) {
		comps[comp.name] = comp
	}
	note := ""
	if _, err := os.Stat(c.StateDir); os.IsNotExist(err) {
		note = " (none: no cluster was started with it)"
	}
	fmt.Fprintf(w, "state dir: %s%s\n\n", c.StateDir, note)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tSTATE\tPID\tADDRESS")
	for _, name := range componentNames {
		state, pidText := "stopped", "-"
		if pid, ok := c.runningPID(name); ok {
			state, pidText = "running", fmt.Sprint(pid)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, state, pidText, comps[name].addr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, ok := c.runningPID("kube-apiserver"); !ok {
		return nil
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	fmt.Fprintf(w, "\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tKIND\tREADY\tCAPACITY")
	for _, n := range nodes.Items {
		kind := "process"
		if n.Annotations[FakeNodeAnnotation] == FakeNodeValue {
			kind = "kwok"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Name, kind, readyText(n), capacityText(n.Status.Capacity))
	}
	return tw.Flush()
}

func readyText(n corev1.Node) string {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return string(cond.Status)
		}
	}
	return "Unknown"
}

func capacityText(rl corev1.ResourceList) string {
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, GPUResource} {
		if q, ok := rl[name]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
		}
	}
	return strings.Join(parts, " ")
}

// Env is the shell code that points kubectl at the cluster. Outside a
// checkout it needs a cluster that up started, whose binaries it recorded.
func Env(c *Config) (string, error) {
	bins, err := c.clusterBinaries()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("export KUBECONFIG=%s\nexport PATH=%s:$PATH\n", ShellQuote(c.Kubeconfig()), ShellQuote(bins.ControlPlane)), nil
}

// ShellQuote quotes a word for sh unless it needs none.
func ShellQuote(s string) string {
	safe := func(r rune) bool {
		return strings.ContainsRune("/.-_:+", r) || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	if strings.IndexFunc(s, func(r rune) bool { return !safe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
