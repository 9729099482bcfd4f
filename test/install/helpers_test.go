package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/test/framework"
)

const (
	namespace = framework.OperatorNamespace
	lease     = framework.OperatorLease
	jobsNS    = "install-jobs"
)

// waitOperator waits until the operator runs from image (by digest) on
// both replicas, one of them holds the leader lease, and every operator
// process runs as the image's non-root user.
func waitOperator(t *testing.T, g gomega.Gomega, digest string) {
	t.Helper()
	ctx := context.Background()
	g.Eventually(func(g gomega.Gomega) {
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, "muster-operator", metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(d.Status.UpdatedReplicas).To(gomega.BeEquivalentTo(2), "updated replicas")
		g.Expect(d.Status.AvailableReplicas).To(gomega.BeEquivalentTo(2), "available replicas")
		g.Expect(d.Status.Replicas).To(gomega.BeEquivalentTo(2), "replicas (an old one still there)")
		g.Expect(available(d)).To(gomega.BeTrue(), "Available condition: %v", d.Status.Conditions)
		pods := runningOperatorPods(g)
		g.Expect(pods).To(gomega.HaveLen(2))
		for _, p := range pods {
			g.Expect(p.Status.ContainerStatuses).NotTo(gomega.BeEmpty())
			g.Expect(p.Status.ContainerStatuses[0].ImageID).To(gomega.HaveSuffix("@"+digest), "pod %s runs %s", p.Name, p.Status.ContainerStatuses[0].ImageID)
		}
		l, err := cs.CoordinationV1().Leases(namespace).Get(ctx, lease, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(l.Spec.HolderIdentity).NotTo(gomega.BeNil())
		holders := 0
		for _, p := range pods {
			if strings.HasPrefix(*l.Spec.HolderIdentity, p.Name+"_") {
				holders++
			}
		}
		g.Expect(holders).To(gomega.Equal(1), "the lease is held by %s", *l.Spec.HolderIdentity)
	}, 3*time.Minute, time.Second).Should(gomega.Succeed(), func() string { return framework.DescribePods(cs, namespace, metav1.ListOptions{}) })
	g.Expect(operatorUIDs()).To(gomega.ConsistOf(65532, 65532), "the operator processes' uids")
}

func runningOperatorPods(g gomega.Gomega) []corev1.Pod {
	pods, err := cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: framework.OperatorSelector})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// operatorUIDs are the real uids of the processes running the operator's
// binary, read from /proc: the process node runs them on this machine.
func operatorUIDs() []int {
	var uids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// As the image's entrypoint, or by name on its PATH (the previous
		// release's manifests name the command).
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if err != nil || (argv0 != "/usr/local/bin/muster-operator" && argv0 != "muster-operator") {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				uid, _ := strconv.Atoi(f[1])
				uids = append(uids, uid)
			}
		}
	}
	return uids
}

// webhookAnswers waits until the webhook refuses a job only it can refuse
// (a role that depends on a later one), naming the field, written for
// apiVersion (a v1alpha1 one goes through the conversion webhook first).
// The API server calls them through the muster-webhook Service, as on any
// cluster.
func webhookAnswers(g gomega.Gomega, dir, apiVersion string) {
	invalid := filepath.Join(dir, "invalid.yaml")
	g.Expect(os.WriteFile(invalid, []byte("apiVersion: muster.dev/"+apiVersion+"\n"+invalidJob), 0o644)).To(gomega.Succeed())
	g.Eventually(func() string {
		out, _ := run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "create", "--dry-run=server", "-n", "default", "-f", invalid)
		return out
	}, 2*time.Minute, time.Second).Should(gomega.And(
		gomega.ContainSubstring(`The TrainingJob "invalid" is invalid: spec.roles[0].dependsOn[0].role: Invalid value: "second"`),
		gomega.ContainSubstring("a role may depend only on earlier roles")))
}

// invalidJob passes the CRD's schema and CEL rules; the webhook refuses it.
// webhookAnswers puts its apiVersion before it.
const invalidJob = `kind: TrainingJob
metadata: {name: invalid}
spec:
  roles:
  - name: first
    dependsOn: [{role: second}]
    template: {spec: {containers: [{name: main, image: busybox}]}}
  - name: second
    template: {spec: {containers: [{name: main, image: busybox}]}}
`

// runExample runs examples/generic in the jobs namespace to Succeeded.
func runExample(g gomega.Gomega, dir string) {
	out, err := run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "apply", "--server-side", "-n", jobsNS,
		"-k", filepath.Join(cluster.Root, "examples", "generic"))
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl apply: %s", out)
	g.Eventually(func() (string, error) { return jobPhase(dir, jobsNS, "generic") }, 2*time.Minute, time.Second).
		Should(gomega.Equal("Succeeded"), func() string {
			out, _ := run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "get", "pods", "-o", "wide", "-n", jobsNS)
			return out
		})
}

// sleeperJob runs until it is deleted: a job that is running when Muster
// is uninstalled.
const sleeperJob = `apiVersion: muster.dev/v1beta1
kind: TrainingJob
metadata: {name: sleeper}
spec:
  roles:
  - name: worker
    replicas: 2
    template: {spec: {containers: [{name: main, image: debian:bookworm-slim, command: [sleep, "3600"]}]}}
`

// startSleeper starts sleeperJob and waits until its pods run.
func startSleeper(g gomega.Gomega, dir string) {
	f := filepath.Join(dir, "sleeper.yaml")
	g.Expect(os.WriteFile(f, []byte(sleeperJob), 0o644)).To(gomega.Succeed())
	out, err := run(dir, kubectl, "--kubeconfig", cluster.Kubeconfig(), "apply", "--server-side", "-n", jobsNS, "-f", f)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl apply: %s", out)
	g.Eventually(func() (string, error) { return jobPhase(dir, jobsNS, "sleeper") }, 2*time.Minute, time.Second).Should(gomega.Equal("Running"))
}

// nothingLeft checks that no object of Muster's is left and no pod is
// stuck Terminating on the tracking finalizer; with crdGone, that the CRD
// went, and with it every job and every pod of a job.
func nothingLeft(g gomega.Gomega, what string, crdGone bool) {
	ctx := context.Background()
	g.Eventually(func() ([]string, error) {
		pods, err := cs.CoreV1().Pods(jobsNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var left []string
		for _, p := range pods.Items {
			if crdGone || p.DeletionTimestamp != nil {
				left = append(left, fmt.Sprintf("%s (finalizers %v, deleting %v)", p.Name, p.Finalizers, p.DeletionTimestamp != nil))
			}
		}
		return left, nil
	}, 2*time.Minute, time.Second).Should(gomega.BeEmpty(), "job pods left after %s", what)
	g.Eventually(func() ([]corev1.Pod, error) {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return pods.Items, nil
	}, time.Minute, time.Second).Should(gomega.BeEmpty(), "operator pods left after %s", what)
	gets := map[string]func() error{
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
		"Lease " + lease: func() error {
			_, err := cs.CoordinationV1().Leases(namespace).Get(ctx, lease, metav1.GetOptions{})
			return err
		},
		"ClusterRole muster-operator": func() error {
			_, err := cs.RbacV1().ClusterRoles().Get(ctx, "muster-operator", metav1.GetOptions{})
			return err
		},
		"ClusterRoleBinding muster-operator": func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "muster-operator", metav1.GetOptions{})
			return err
		},
		"ValidatingWebhookConfiguration muster-validating-webhook": func() error {
			_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "muster-validating-webhook", metav1.GetOptions{})
			return err
		},
	}
	for obj, get := range gets {
		g.Eventually(func() bool { return apierrors.IsNotFound(get()) }, time.Minute, time.Second).Should(gomega.BeTrue(), "%s is left after %s", obj, what)
	}
	if crdGone {
		g.Eventually(func() bool {
			_, err := run("", kubectl, "--kubeconfig", cluster.Kubeconfig(), "get", "crd", "trainingjobs.muster.dev")
			return err != nil
		}, time.Minute, time.Second).Should(gomega.BeTrue(), "the CRD is left after %s", what)
	}
}

// apply applies a file server-side, retrying while the API server refuses
// what goes into a namespace created a moment ago under the name of one
// just deleted (its admission still has the deletion in its cache).
func apply(g gomega.Gomega, dir string, args ...string) {
	g.Eventually(func() error {
		out, err := run(dir, kubectl, append([]string{"apply", "--server-side"}, args...)...)
		if err != nil {
			return fmt.Errorf("kubectl apply %v: %w: %s", args, err, out)
		}
		return nil
	}, time.Minute, 2*time.Second).Should(gomega.Succeed())
}

// run runs a command in dir with its own Helm folders (never the user's),
// and returns its combined output. kubectl gets a discovery cache of its
// own, every time: the tests install releases whose CRDs serve different
// versions, and a cached list of them would send kubectl to one no longer
// (or not yet) served.
func run(dir, name string, args ...string) (string, error) {
	if filepath.Base(name) == "helm" {
		args = append(args, "--kubeconfig", cluster.Kubeconfig())
	}
	if dir == "" {
		dir = os.TempDir()
	}
	cache, err := os.MkdirTemp("", "kubecache")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(cache) }()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"KUBECACHEDIR="+cache,
		"KUBECONFIG="+cluster.Kubeconfig(),
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

// cleanSlate waits until nothing of an earlier test is left (its cleanup
// deletes what it installed, and namespaces take a while to go), and
// removes, when the test ends, whatever it left: the CRD and its jobs, the
// operator's namespace, the jobs' namespace, and the tracking finalizer of
// any pod a failed test left Terminating.
func cleanSlate(t *testing.T, g gomega.Gomega) {
	t.Helper()
	ctx := context.Background()
	gone := func(g gomega.Gomega) {
		for _, ns := range []string{namespace, jobsNS} {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "namespace %s still there", ns)
		}
		out, err := run("", kubectl, "get", "crd", "trainingjobs.muster.dev", "--ignore-not-found", "-o", "name")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(strings.TrimSpace(out)).To(gomega.BeEmpty(), "the CRD is still there")
	}
	g.Eventually(gone, 3*time.Minute, time.Second).Should(gomega.Succeed())
	t.Cleanup(func() {
		pods, err := cs.CoreV1().Pods(jobsNS).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				_, _ = run("", kubectl, "patch", "pod", p.Name, "-n", jobsNS, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
			}
		}
		_, _ = run("", kubectl, "delete", "crd", "trainingjobs.muster.dev", "--ignore-not-found", "--wait=false")
		_, _ = run("", kubectl, "delete", "namespace", namespace, jobsNS, "--ignore-not-found", "--wait=false")
		_, _ = run("", kubectl, "delete", "validatingwebhookconfiguration", "muster-validating-webhook", "--ignore-not-found")
	})
}
