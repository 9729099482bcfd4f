package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	musterwebhook "github.com/muster-dev/muster/internal/webhook"
)

// The operator's certificate wiring, without the kubelet: the rotator
// fills the empty Secret, writes its CA into the webhook configuration,
// and once the Secret's files are in the cert folder (the test copies them,
// as the kubelet would mount them) the webhook server starts with a
// certificate the API server trusts for the Service's name.
func TestCertRotatorBootstrapsTheWebhookServer(t *testing.T) {
	e := newEnv(t)
	const secretName = "muster-webhook-cert"
	e.g.Expect(k8s.Create(e.ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: e.ns}})).To(gomega.Succeed())
	// A configuration of this test's own: the suite's is served by envtest.
	// It selects no namespace, so it never calls anything.
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-validating"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "v.muster.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: e.ns, Name: "muster-webhook", Path: ptr.To("/validate"),
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"muster.dev/never": "true"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	e.g.Expect(k8s.Create(e.ctx(), validating)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), validating) })

	certDir := t.TempDir()
	port := freePort(t)
	ready := make(chan struct{})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: musterwebhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}, ready),
	})
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	e.g.Expect(musterwebhook.AddCertRotator(mgr, musterwebhook.CertOptions{
		Namespace: e.ns, ServiceName: "muster-webhook", SecretName: secretName, CertDir: certDir,
		ValidatingConfig: validating.Name,
	}, ready)).To(gomega.Succeed())
	e.g.Expect(musterwebhook.Register(mgr)).To(gomega.Succeed())
	started := mgr.GetWebhookServer().StartedChecker()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		e.g.Expect(<-done).To(gomega.Succeed())
	})

	secret := &corev1.Secret{}
	e.g.Eventually(func(g gomega.Gomega) {
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: secretName}, secret)).To(gomega.Succeed())
		g.Expect(secret.Data).To(gomega.HaveKey("tls.crt"))
	}, timeout, interval).Should(gomega.Succeed())
	e.g.Expect(started(nil)).To(gomega.HaveOccurred(), "no server before the certificate is in the folder")
	for _, name := range []string{"tls.crt", "tls.key"} {
		e.g.Expect(os.WriteFile(filepath.Join(certDir, name), secret.Data[name], 0o600)).To(gomega.Succeed())
	}
	e.g.Eventually(ready, timeout).Should(gomega.BeClosed())

	ca := secret.Data["ca.crt"]
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(validating), validating)).To(gomega.Succeed())
	e.g.Expect(validating.Webhooks[0].ClientConfig.CABundle).To(gomega.Equal(ca))

	// What the API server checks when it calls the Service.
	roots := x509.NewCertPool()
	e.g.Expect(roots.AppendCertsFromPEM(ca)).To(gomega.BeTrue())
	e.g.Eventually(func() error {
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			&tls.Config{RootCAs: roots, ServerName: "muster-webhook." + e.ns + ".svc"})
		if err != nil {
			return err
		}
		return conn.Close()
	}, timeout, interval).Should(gomega.Succeed())
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// The shipped configuration does not send an update that leaves the spec
// as it was: with the operator unreachable, a job still takes a label and
// is still deleted in the foreground (the garbage collector takes its
// finalizer off with an update), while a spec change is refused.
func TestUpdatesThatKeepTheSpecDoNotNeedTheOperator(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("j").Role("worker", 1).Suspend(true).Obj())

	// The shipped configuration, pointed at a port nothing listens on and
	// scoped to this test's namespace.
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "webhook", "webhooks.yaml"))
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	unreachable := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	e.g.Expect(yaml.Unmarshal(raw, unreachable)).To(gomega.Succeed())
	unreachable.Name = e.ns + "-unreachable"
	for i := range unreachable.Webhooks {
		w := &unreachable.Webhooks[i]
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{
			URL: ptr.To("https://127.0.0.1:" + strconv.Itoa(freePort(t)) + "/validate"),
		}
		w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: e.ns}}
		w.TimeoutSeconds = ptr.To[int32](2)
	}
	e.g.Expect(unreachable.Webhooks).NotTo(gomega.BeEmpty())
	e.g.Expect(k8s.Create(e.ctx(), unreachable)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), unreachable) })

	job := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "j"}}
	// Once the API server has the configuration, a spec change is sent,
	// and refused. Each try flips suspend from what it is now: a try made
	// before the API server had the configuration went through, and the
	// same value again would leave the spec as it is, which is not sent.
	e.g.Eventually(func() error {
		flip := musterv1.ExecutionSuspend
		if e.get("j").Spec.Run.Execution == musterv1.ExecutionSuspend {
			flip = musterv1.ExecutionStart
		}
		return k8s.Patch(e.ctx(), job, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"run":{"execution":%q}}}`, flip)))
	}, timeout, interval).Should(gomega.MatchError(gomega.ContainSubstring("failed calling webhook")))
	e.g.Expect(k8s.Patch(e.ctx(), job, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"vision"}}}`)))).To(gomega.Succeed())
	e.g.Expect(e.get("j").Labels).To(gomega.HaveKeyWithValue("team", "vision"))

	e.g.Expect(k8s.Delete(e.ctx(), job, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(gomega.Succeed())
	e.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(e.ctx(), client.ObjectKeyFromObject(job), &musterv1.TrainingJob{}))
	}, timeout, interval).Should(gomega.BeTrue(), "the garbage collector took the foreground-deletion finalizer off")
}
