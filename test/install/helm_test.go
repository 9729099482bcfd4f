package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/tools/devcluster"
)

const (
	namespace = "muster-system"
	release   = "muster"
	lease     = "muster-operator.muster.dev"
)

// localValues are what the local cluster needs of the chart. Its API
// server reaches no Service, so it calls the webhook by URL through a
// hostPort of the operator's pod on the process node, as config/dev does.
// A node holds a hostPort once, and the cluster has one process node: the
// second of the chart's two replicas goes to the fake (KWOK) node, which
// the toleration and the affinity allow, and to no other. There it is
// scheduled and Available but runs nothing, so the replica on the process
// node must be the one that leads.
var localValues = `webhook:
  url: https://localhost:9443
  hostPort: 9443
tolerations:
- {key: ` + devcluster.FakeNodeTaintKey + `, operator: Exists, effect: NoSchedule}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchFields: [{key: metadata.name, operator: In, values: [` + devcluster.ProcNodeName + `]}]
      - matchFields: [{key: metadata.name, operator: In, values: [` + devcluster.FakeNodeName(0) + `]}]
`

// TestHelmInstall installs charts/muster with the helm command, checks that
// the operator runs (Deployment Available, leader elected, webhook
// refusing an invalid job by its field), runs examples/generic to
// Succeeded, uninstalls, and checks what Helm leaves: the CRD (Helm never
// deletes what a chart's crds/ installed) and so the jobs, and nothing of
// the operator.
func TestHelmInstall(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	values := filepath.Join(dir, "local-cluster.yaml")
	g.Expect(os.WriteFile(values, []byte(localValues), 0o644)).To(gomega.Succeed())

	start := time.Now()
	out, err := run(dir, helm, "install", release, filepath.Join(cluster.Root, "charts", "muster"),
		"-n", namespace, "--create-namespace", "-f", values)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "helm install: %s", out)
	g.Expect(out).To(gomega.ContainSubstring("STATUS: deployed"))
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = run(dir, helm, "uninstall", release, "-n", namespace)
		}
	})

	// Both replicas Available.
	g.Eventually(func(g gomega.Gomega) {
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, "muster-operator", metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(d.Status.AvailableReplicas).To(gomega.BeEquivalentTo(2), "available replicas")
		g.Expect(available(d)).To(gomega.BeTrue(), "Available condition: %v", d.Status.Conditions)
	}, 3*time.Minute, time.Second).Should(gomega.Succeed(), func() string { return operatorPods(ctx) })

	// The lease is held by the replica on the process node: the one that runs.
	g.Eventually(func(g gomega.Gomega) {
		l, err := cs.CoordinationV1().Leases(namespace).Get(ctx, lease, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(l.Spec.HolderIdentity).NotTo(gomega.BeNil())
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + devcluster.ProcNodeName})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(pods.Items).To(gomega.HaveLen(1))
		g.Expect(*l.Spec.HolderIdentity).To(gomega.HavePrefix(pods.Items[0].Name + "_"))
	}, 2*time.Minute, time.Second).Should(gomega.Succeed(), func() string { return operatorPods(ctx) })

	// The webhook answers: it refuses a job whose role depends on a later
	// one (which only the webhook checks; CEL cannot), naming the field.
	// Until the operator has written its certificate and CA, the API
	// server's call fails otherwise.
	invalid := filepath.Join(dir, "invalid.yaml")
	g.Expect(os.WriteFile(invalid, []byte(invalidJob), 0o644)).To(gomega.Succeed())
	g.Eventually(func() string {
		out, _ := run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "create", "-n", "default", "-f", invalid)
		return out
	}, 2*time.Minute, time.Second).Should(gomega.And(
		gomega.ContainSubstring(`The TrainingJob "invalid" is invalid: spec.roles[0].dependsOn[0].role: Invalid value: "second"`),
		gomega.ContainSubstring("a role may depend only on earlier roles")))
	t.Logf("installed, leader elected, webhook answering in %s", time.Since(start).Round(time.Second))

	// A job runs to Succeeded on the process node.
	jobs := newNamespace(t, g)
	out, err = run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "apply", "--server-side", "-n", jobs,
		"-k", filepath.Join(cluster.Root, "examples", "generic"))
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl apply: %s", out)
	g.Eventually(func() (string, error) { return jobPhase(dir, jobs, "generic") }, 2*time.Minute, time.Second).
		Should(gomega.Equal("Succeeded"), func() string {
			out, _ := run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "get", "pods", "-o", "wide", "-n", jobs)
			return out
		})

	// Uninstall: the operator goes, with every object the chart made.
	out, err = run(dir, helm, "uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "helm uninstall: %s", out)
	uninstalled = true
	g.Eventually(func() ([]corev1.Pod, error) {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return pods.Items, nil
	}, time.Minute, time.Second).Should(gomega.BeEmpty(), "operator pods left")
	for what, get := range map[string]func() error{
		"Deployment muster-operator": func() error {
			_, err := cs.AppsV1().Deployments(namespace).Get(ctx, "muster-operator", metav1.GetOptions{})
			return err
		},
		"Service muster-webhook": func() error {
			_, err := cs.CoreV1().Services(namespace).Get(ctx, "muster-webhook", metav1.GetOptions{})
			return err
		},
		"Secret muster-webhook-cert": func() error {
			_, err := cs.CoreV1().Secrets(namespace).Get(ctx, "muster-webhook-cert", metav1.GetOptions{})
			return err
		},
		"ServiceAccount muster-operator": func() error {
			_, err := cs.CoreV1().ServiceAccounts(namespace).Get(ctx, "muster-operator", metav1.GetOptions{})
			return err
		},
		"ClusterRole muster-operator": func() error {
			_, err := cs.RbacV1().ClusterRoles().Get(ctx, "muster-operator", metav1.GetOptions{})
			return err
		},
		"ValidatingWebhookConfiguration muster-validating-webhook": func() error {
			_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "muster-validating-webhook", metav1.GetOptions{})
			return err
		},
	} {
		g.Expect(apierrors.IsNotFound(get())).To(gomega.BeTrue(), "%s is left after helm uninstall", what)
	}
	out, err = run(dir, helm, "list", "-A", "-q")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "helm list: %s", out)
	g.Expect(strings.TrimSpace(out)).To(gomega.BeEmpty(), "releases left")

	// The CRD stays, and so do the jobs, with their status.
	out, err = run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "get", "crd", "trainingjobs.muster.dev", "-o", "name")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "the CRD is gone after helm uninstall: %s", out)
	g.Expect(jobPhase(dir, jobs, "generic")).To(gomega.Equal("Succeeded"))
	// No webhook configuration is left to refuse creates: the invalid job
	// is now stored, and nothing runs it.
	out, err = run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "create", "-n", jobs, "-f", invalid)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "a create after helm uninstall: %s", out)
	t.Logf("install, job and uninstall in %s", time.Since(start).Round(time.Second))
}

// invalidJob passes the CRD's schema and CEL rules; the webhook refuses it.
const invalidJob = `apiVersion: muster.dev/v1alpha1
kind: TrainingJob
metadata: {name: invalid}
spec:
  roles:
  - name: first
    dependsOn: [{role: second}]
    template: {spec: {containers: [{name: main, image: busybox}]}}
  - name: second
    template: {spec: {containers: [{name: main, image: busybox}]}}
`

// run runs a command in dir with its own Helm folders (never the user's),
// and returns its combined output.
func run(dir, name string, args ...string) (string, error) {
	if filepath.Base(name) == "helm" {
		args = append(args, "--kubeconfig", cluster.Kubeconfig())
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "helm", "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func jobPhase(dir, ns, name string) (string, error) {
	out, err := run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "get", "trainingjob", name, "-n", ns, "-o", "jsonpath={.status.phase}")
	return strings.TrimSpace(out), err
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// operatorPods says where the operator's pods are, for a failure message.
func operatorPods(ctx context.Context) string {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		b.WriteString(p.Name + " on " + p.Spec.NodeName + ": " + string(p.Status.Phase))
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				b.WriteString(", " + string(c.Type) + " " + c.Reason + " " + c.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// newNamespace creates a namespace for the test's jobs.
func newNamespace(t *testing.T, g gomega.Gomega) string {
	t.Helper()
	ctx := context.Background()
	name := "install-jobs"
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// Pods are refused until the namespace's default ServiceAccount exists.
	g.Eventually(func() error {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	}, 30*time.Second, 200*time.Millisecond).Should(gomega.Succeed())
	return name
}
