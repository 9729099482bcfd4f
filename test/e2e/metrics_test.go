package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/test/framework"
)

// The operator's metrics port, as config/dev publishes it on the node.
const metricsURL = "https://127.0.0.1:16268/metrics"

// The operator serves its metrics only to a client the API server
// authenticates and authorizes: no token is refused, a token without the
// muster-metrics-reader role is forbidden, a token with it reads them; and
// the scraper can tell it is the operator (the rotator's CA verifies it).
func TestMetricsNeedAuthorization(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := cluster.Namespace(t, g)

	g.Expect(scrape(g, "")).To(gomega.HaveField("Code", http.StatusUnauthorized))
	g.Expect(scrape(g, serviceAccountToken(g, ns, "stranger"))).To(gomega.HaveField("Code", http.StatusForbidden))

	reader := serviceAccountToken(g, ns, "scraper")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "muster-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}
	_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	g.Eventually(func() scraped { return scrape(g, reader) }, 30*time.Second, time.Second).Should(gomega.And(
		gomega.HaveField("Code", http.StatusOK),
		gomega.HaveField("Body", gomega.ContainSubstring("controller_runtime_reconcile_total")),
	))
}

type scraped struct {
	Code int
	Body string
}

// scrape reads the metrics endpoint with a bearer token ("" sends none).
// It checks whom it talks to as the chart's ServiceMonitor does: the
// operator serves metrics with the webhook's certificate, which names the
// metrics Service and chains to the CA in the rotator's Secret.
func scrape(g gomega.Gomega, token string) scraped {
	secret, err := cs.CoreV1().Secrets(framework.OperatorNamespace).Get(context.Background(), "muster-webhook-cert", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(secret.Data["ca.crt"])).To(gomega.BeTrue(), "the rotator's Secret holds no CA")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "muster-operator-metrics." + framework.OperatorNamespace + ".svc"},
	}}
	req, err := http.NewRequest(http.MethodGet, metricsURL, nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return scraped{Code: resp.StatusCode, Body: string(body)}
}

// serviceAccountToken makes a ServiceAccount and returns a token for it.
func serviceAccountToken(g gomega.Gomega, ns, name string) string {
	ctx := context.Background()
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(strings.TrimSpace(tr.Status.Token)).NotTo(gomega.BeEmpty(), fmt.Sprintf("token of %s/%s", ns, name))
	return tr.Status.Token
}
