package framework

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/tools/devcluster"
)

// Cluster is a running local cluster with the clients its tests use. Its
// configuration is embedded, so a tier reads Kubeconfig(), Root or
// StateDir off it directly.
type Cluster struct {
	*devcluster.Config
	// Tier is the test tier the cluster serves: its state dir under the
	// cache, and the prefix of the namespaces Namespace makes.
	Tier string
	// REST reaches the API server as the cluster's admin.
	REST      *rest.Config
	Clientset kubernetes.Interface
	// Client reads and writes client-go's types and Muster's (Scheme).
	Client client.Client
	// Kubectl is the kubectl matching the control plane.
	Kubectl string
}

// Scheme holds client-go's types and Muster's served version.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(musterv1.AddToScheme(s))
	return s
}

// StartCluster starts the tier's own local cluster, under
// <cache>/<tier>, with its progress lines marked "<tier> cluster: ".
// configure edits what the cluster runs (fake nodes, gang schedulers,
// Kueue, no operator); setUp, when not nil, installs or builds what the
// tier needs once the cluster serves, and counts towards the time the
// cluster took to be ready.
//
// stop tears the cluster down, and must be called however the tests end.
// On an error the cluster is already torn down, and the error says which
// step failed.
func StartCluster(ctx context.Context, tier string, configure func(*devcluster.Config), setUp func(context.Context, *Cluster) error) (_ *Cluster, stop func(), err error) {
	cfg, err := devcluster.NewConfig()
	if err != nil {
		return nil, nil, err
	}
	// Its own state dir: never the user's muster-dev cluster.
	cfg.StateDir = filepath.Join(cfg.Cache, tier)
	cfg.Out = devcluster.PrefixWriter(tier + " cluster: ")
	if configure != nil {
		configure(cfg)
	}

	// A run killed before its teardown (timeout, ^C twice) leaves a cluster
	// behind; the next run removes it first.
	if err := devcluster.Down(ctx, cfg); err != nil {
		return nil, nil, fmt.Errorf("removing a leftover cluster: %w", err)
	}
	stopGuard := devcluster.GuardTeardown(cfg)
	teardown := func() {
		if err := devcluster.Down(context.WithoutCancel(ctx), cfg); err != nil {
			fmt.Fprintln(os.Stderr, tier+": tearing down:", err)
		}
		stopGuard()
	}
	defer func() {
		if err != nil {
			teardown()
		}
	}()

	start := time.Now()
	if err := devcluster.Up(ctx, cfg); err != nil {
		return nil, nil, fmt.Errorf("starting the cluster: %w", err)
	}
	c := &Cluster{Config: cfg, Tier: tier}
	if c.REST, err = cfg.RESTConfig(); err != nil {
		return nil, nil, err
	}
	if c.Clientset, err = kubernetes.NewForConfig(c.REST); err != nil {
		return nil, nil, err
	}
	if c.Client, err = client.New(c.REST, client.Options{Scheme: Scheme()}); err != nil {
		return nil, nil, err
	}
	bins, _, err := cfg.BinaryPaths()
	if err != nil {
		return nil, nil, err
	}
	c.Kubectl = bins.Kubectl()
	if setUp != nil {
		if err := setUp(ctx, c); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(os.Stderr, "%s: cluster ready in %s\n", tier, time.Since(start).Round(time.Second))
	return c, teardown, nil
}

// Namespace creates a namespace for one test, named after it, and deletes
// it when the test ends.
func (c *Cluster) Namespace(t *testing.T, g gomega.Gomega) string {
	t.Helper()
	name := fmt.Sprintf("%s-%s-%04x", c.Tier, dnsLabel(strings.TrimPrefix(t.Name(), "Test"), 30), rand.IntN(1<<16))
	c.NamespaceNamed(t, g, name)
	return name
}

// NamespaceNamed creates the namespace name for one test, and deletes it
// when the test ends.
func (c *Cluster) NamespaceNamed(t *testing.T, g gomega.Gomega, name string) {
	t.Helper()
	_, err := c.Clientset.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		_ = c.Clientset.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// Registered after the deletion, so it runs before it: a failed test
	// shows its namespace's jobs and where their pods are.
	c.DumpOnFailure(t, Dump{Namespace: name})
	waitDefaultServiceAccount(g, c.Clientset, name)
}

// CreateNamespace creates the namespace name, which the caller deletes,
// and waits until pods may run in it.
func CreateNamespace(g gomega.Gomega, cs kubernetes.Interface, name string) {
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	waitDefaultServiceAccount(g, cs, name)
}

// waitDefaultServiceAccount waits for the namespace's default
// ServiceAccount: pods are rejected until the service-account controller
// has made it.
func waitDefaultServiceAccount(g gomega.Gomega, cs kubernetes.Interface, ns string) {
	g.Eventually(func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err
	}, 30*time.Second, 200*time.Millisecond).Should(gomega.Succeed())
}

// dnsLabel lower-cases s and keeps what a DNS label allows, at most n
// characters.
func dnsLabel(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if b.Len() < n && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}
