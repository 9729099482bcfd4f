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
	"time"

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
	validating := rotatorTargets(t, e)

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
		ValidatingConfig: validating.Name, ControllerName: "cert-rotator-" + e.ns,
	}, ready)).To(gomega.Succeed())
	e.g.Expect(musterwebhook.Register(mgr, musterv1.GangNone)).To(gomega.Succeed())
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

// Both operator replicas run the certificate rotator (each serves
// webhooks, and must not wait for the lease to get its certificate). Two
// rotators started together on an empty Secret settle on one certificate:
// the first write wins (the other's update conflicts and it takes the
// Secret's), the webhook configuration gets that CA, and nothing changes
// after, so the API server is never left with a CA one replica does not
// serve under.
func TestTwoReplicasRotatorsAgreeOnOneCertificate(t *testing.T) {
	e := newEnv(t)
	validating := rotatorTargets(t, e)

	type replica struct {
		certDir string
		ready   chan struct{}
	}
	replicas := make([]replica, 2)
	for i := range replicas {
		r := replica{certDir: t.TempDir(), ready: make(chan struct{})}
		replicas[i] = r
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:        scheme,
			Metrics:       metricsserver.Options{BindAddress: "0"},
			WebhookServer: musterwebhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: freePort(t), CertDir: r.certDir}, r.ready),
		})
		e.g.Expect(err).NotTo(gomega.HaveOccurred())
		e.g.Expect(musterwebhook.AddCertRotator(mgr, musterwebhook.CertOptions{
			Namespace: e.ns, ServiceName: "muster-webhook", SecretName: secretName, CertDir: r.certDir,
			ValidatingConfig: validating.Name, ControllerName: fmt.Sprintf("cert-rotator-%s-%d", e.ns, i),
		}, r.ready)).To(gomega.Succeed())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			e.g.Expect(<-done).To(gomega.Succeed())
		})
	}

	secret := &corev1.Secret{}
	e.g.Eventually(func(g gomega.Gomega) {
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: secretName}, secret)).To(gomega.Succeed())
		g.Expect(secret.Data).To(gomega.HaveKey("tls.crt"))
	}, timeout, interval).Should(gomega.Succeed())
	// The kubelet mounts the Secret into each replica's pod.
	for _, r := range replicas {
		for _, name := range []string{"tls.crt", "tls.key"} {
			e.g.Expect(os.WriteFile(filepath.Join(r.certDir, name), secret.Data[name], 0o600)).To(gomega.Succeed())
		}
	}
	for _, r := range replicas {
		e.g.Eventually(r.ready, timeout).Should(gomega.BeClosed())
	}
	e.g.Consistently(func(g gomega.Gomega) {
		now := &corev1.Secret{}
		g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(secret), now)).To(gomega.Succeed())
		g.Expect(now.Data).To(gomega.Equal(secret.Data), "the Secret changed after both replicas were ready")
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(validating), vwc)).To(gomega.Succeed())
		g.Expect(vwc.Webhooks[0].ClientConfig.CABundle).To(gomega.Equal(secret.Data["ca.crt"]))
	}, 3*time.Second, 200*time.Millisecond).Should(gomega.Succeed())
}

// Muster's admission webhook is down (installed with failurePolicy Fail):
// a user's new job is refused with an error that names the webhook, so
// nothing is made for it, and so is an edit of a job's spec; a label edit
// still goes through (the webhook is not called when the spec is
// unchanged), and the running job is not lost: its failed pod is counted
// and replaced, and it completes.
func TestJobsOutliveTheWebhook(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("running").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(3).Obj())
	pods := e.runAll("running", 2)
	e.waitPhase("running", musterv1.PhaseRunning)

	// The installed configuration, for this namespace only, calling an
	// address nobody listens on.
	installed := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Name: musterwebhook.ValidatingConfigName}, installed)).To(gomega.Succeed())
	down := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-down"}}
	for _, w := range installed.Webhooks {
		w.ClientConfig.Service = nil
		w.ClientConfig.URL = ptr.To(fmt.Sprintf("https://127.0.0.1:%d/validate-muster-dev-v1beta1-trainingjob", freePort(t)))
		w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: e.ns}}
		down.Webhooks = append(down.Webhooks, w)
	}
	e.g.Expect(down.Webhooks).NotTo(gomega.BeEmpty())
	e.g.Expect(k8s.Create(e.ctx(), down)).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), down) })

	// The configuration takes a moment to reach the API server's
	// admission chain: wait for it with dry runs, which create nothing.
	e.g.Eventually(func() error {
		return k8s.Create(e.ctx(), e.job("refused").Role("w", 1).Obj(), client.DryRunAll)
	}, timeout, interval).Should(gomega.MatchError(gomega.ContainSubstring(`failed calling webhook "vtrainingjob.muster.dev"`)))
	e.g.Expect(k8s.Create(e.ctx(), e.job("refused").Role("w", 1).Obj())).
		To(gomega.MatchError(gomega.ContainSubstring(`failed calling webhook "vtrainingjob.muster.dev"`)))
	e.g.Expect(apierrors.IsNotFound(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "refused"}, &musterv1.TrainingJob{}))).To(gomega.BeTrue())
	e.g.Expect(e.update("running", func(j *musterv1.TrainingJob) { j.Spec.FailurePolicy.BackoffLimit = ptr.To[int32](5) })).
		To(gomega.MatchError(gomega.ContainSubstring("failed calling webhook")))
	e.g.Expect(e.update("running", func(j *musterv1.TrainingJob) { j.Labels = map[string]string{"team": "a"} })).To(gomega.Succeed())

	e.exit(&pods[0], 1, "Error")
	e.run(e.waitPod(pods[0].Name, string(pods[0].UID)))
	e.eventuallyJob("running", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Restarts.Total).To(gomega.Equal(int32(1)))
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
	})
	for _, p := range e.pods("running") {
		e.exit(&p, 0, "Completed")
	}
	job := e.waitPhase("running", musterv1.PhaseSucceeded)
	e.g.Expect(job.Status.Restarts.Total).To(gomega.Equal(int32(1)))
}

// secretName is the Secret the rotator tests keep the certificate in.
const secretName = "muster-webhook-cert"

// rotatorTargets makes the empty Secret a rotator fills, and a webhook
// configuration of the test's own for it to inject its CA into (the
// suite's is served by envtest); it selects no namespace, so it never
// calls anything.
func rotatorTargets(t *testing.T, e *env) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	e.g.Expect(k8s.Create(e.ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: e.ns}})).To(gomega.Succeed())
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
	return validating
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
