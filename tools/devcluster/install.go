package devcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/tools/image"
)

// installOperator installs Muster the way a user would: kubectl applies
// config/dev (server-side, because the CRD embeds whole pod templates and
// exceeds client-side apply's annotation limit) and the operator's
// Deployment runs on the process node, with its real RBAC and its admission
// webhook. config/dev is config/production with the webhook called by URL
// through the operator pod's hostPort: this API server cannot reach pods
// through a Service.
func (c *Config) installOperator(ctx context.Context, bins *Binaries, cs kubernetes.Interface, timeout time.Duration) error {
	start := time.Now()
	kubectl := bins.Kubectl()
	img, err := c.pushOperatorImage(bins)
	if err != nil {
		return err
	}
	c.logf("%-24s pushed as %s", "operator image", img)
	dir, err := c.installKustomization(img)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig="+c.Kubeconfig(),
		"apply", "--server-side", "--field-manager=muster-dev", "-k", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply -k config/dev: %w\n%s", err, out)
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A client made before discovery serves the CRD fails to map its kind;
	// whoever uses the cluster next must not have to retry for that.
	if err := poll(waitCtx, func(context.Context) error { return crdServed(cs) }); err != nil {
		return fmt.Errorf("the TrainingJob CRD is not served: %w", err)
	}
	if err := poll(waitCtx, func(ctx context.Context) error { return deploymentAvailable(ctx, cs) }); err != nil {
		return fmt.Errorf("the operator Deployment %s/%s is not Available: %w\n%s",
			OperatorNamespace, operatorDeployment, err, describeOperatorPods(ctx, cs))
	}
	// Available only says the pod is Ready (which the process node reports
	// without probing). Holding the leader lease proves the operator runs
	// and reaches the API server with its service-account token and RBAC.
	if err := poll(waitCtx, func(ctx context.Context) error { return operatorLeads(ctx, cs) }); err != nil {
		return fmt.Errorf("the operator runs but does not hold its leader lease %s/%s: %w\n%s",
			OperatorNamespace, OperatorLease, err, describeOperatorPods(ctx, cs))
	}
	// Every TrainingJob create goes through the webhook: the cluster is
	// ready for jobs once the webhook answers one.
	if err := poll(waitCtx, func(ctx context.Context) error { return c.webhookAnswers(ctx, kubectl) }); err != nil {
		return fmt.Errorf("the admission webhook does not answer: %w\n%s", err, describeOperatorPods(ctx, cs))
	}
	c.logf("%-24s installed in %-8s (Deployment %s/%s Available, leader elected, webhook answering)", "muster-operator", since(start), OperatorNamespace, operatorDeployment)
	return nil
}

// installKustomization is what the operator is installed from: config/dev
// with the operator's image set to img (the image muster-dev built, in the
// local registry, by digest), plus the component of each gang scheduler and
// of Kueue this cluster runs, so the operator drives them with exactly
// their RBAC, and config/profiling when the cluster profiles.
func (c *Config) installKustomization(img string) (string, error) {
	dev := filepath.Join(c.Root, "config", "dev")
	var components []string
	for _, s := range c.Schedulers {
		components = append(components, filepath.Join(c.Root, "config", "gang", strings.ToLower(s)))
	}
	if c.Kueue {
		components = append(components, filepath.Join(c.Root, "config", "queue", "kueue"))
	}
	if c.Profiling {
		components = append(components, filepath.Join(c.Root, "config", "profiling"))
	}
	dir := filepath.Join(c.StateDir, "install")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Written by muster-dev: config/dev, the operator image it built, and the components this cluster runs.\n")
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	// kustomize resolves the paths from the folder's real location: with
	// a state dir behind a symbolic link, a path relative to the link would
	// name another checkout's config.
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	rel := func(p string) string {
		r, err := filepath.Rel(real(dir), real(p))
		if err != nil {
			return p
		}
		return r
	}
	b.WriteString("- " + rel(dev) + "\n")
	if len(components) > 0 {
		b.WriteString("components:\n")
	}
	for _, comp := range components {
		b.WriteString("- " + rel(comp) + "\n")
	}
	name, digest, ok := strings.Cut(img, "@")
	if !ok {
		return "", fmt.Errorf("the operator image %q is not by digest", img)
	}
	fmt.Fprintf(&b, "images:\n- name: %s\n  newName: %s\n  digest: %s\n", image.Name, name, digest)
	if len(c.OperatorArgs) > 0 {
		b.WriteString("patches:\n- target: {group: apps, version: v1, kind: Deployment, name: " + operatorDeployment + "}\n  patch: |-\n")
		for _, arg := range c.OperatorArgs {
			fmt.Fprintf(&b, "    - {op: add, path: /spec/template/spec/containers/0/args/-, value: %s}\n", strconv.Quote(arg))
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644)
}

// probeJob is the smallest valid TrainingJob, created only as a server-side
// dry run: admission runs, nothing is stored. It is written for v1alpha1
// and for v1beta1, so that both the admission webhook and the conversion
// webhook must answer.
const probeJob = `apiVersion: muster.dev/v1beta1
kind: TrainingJob
metadata: {name: webhook-probe, namespace: default}
spec:
  roles:
  - name: probe
    template: {spec: {containers: [{name: probe, image: probe}]}}
---
apiVersion: muster.dev/v1alpha1
kind: TrainingJob
metadata: {name: webhook-probe-v1alpha1, namespace: default}
spec:
  roles:
  - name: probe
    template: {spec: {containers: [{name: probe, image: probe}]}}
`

// webhookAnswers is whether the admission webhook admits a job.
func (c *Config) webhookAnswers(ctx context.Context, kubectl string) error {
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig="+c.Kubeconfig(), "create", "--dry-run=server", "-f", "-")
	cmd.Stdin = strings.NewReader(probeJob)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// crdServed is whether discovery lists trainingjobs in muster.dev/v1beta1.
func crdServed(cs kubernetes.Interface) error {
	list, err := cs.Discovery().ServerResourcesForGroupVersion("muster.dev/v1beta1")
	if err != nil {
		return err
	}
	for _, r := range list.APIResources {
		if r.Name == "trainingjobs" {
			return nil
		}
	}
	return fmt.Errorf("muster.dev/v1beta1 does not list trainingjobs yet")
}

// OperatorLease is the operator's leader-election Lease in
// OperatorNamespace, as cmd/muster-operator names it.
const OperatorLease = "muster-operator.muster.dev"

func operatorLeads(ctx context.Context, cs kubernetes.Interface) error {
	lease, err := cs.CoordinationV1().Leases(OperatorNamespace).Get(ctx, OperatorLease, metav1.GetOptions{})
	if err != nil {
		return err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	pods, err := cs.CoreV1().Pods(OperatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && strings.HasPrefix(holder, p.Name+"_") {
			return nil
		}
	}
	return fmt.Errorf("lease held by %q, not by a running operator pod", holder)
}

func deploymentAvailable(ctx context.Context, cs kubernetes.Interface) error {
	d, err := cs.AppsV1().Deployments(OperatorNamespace).Get(ctx, operatorDeployment, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range d.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue && d.Status.AvailableReplicas > 0 {
			return nil
		}
	}
	return fmt.Errorf("%d/%d replicas available", d.Status.AvailableReplicas, d.Status.Replicas)
}

// describeOperatorPods says where the operator's pods are stuck.
func describeOperatorPods(ctx context.Context, cs kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	pods, err := cs.CoreV1().Pods(OperatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: phase %s, node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, ", %s=%s %s", cond.Type, cond.Status, cond.Message)
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Terminated != nil {
				fmt.Fprintf(&b, ", exited %d (%s)", s.State.Terminated.ExitCode, s.State.Terminated.Reason)
			}
			if s.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, ", last exit %d", s.LastTerminationState.Terminated.ExitCode)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
