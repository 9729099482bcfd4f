package webhook

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ValidatingConfigName is the webhook configuration in config/webhook,
// whose caBundle the rotator keeps current.
const ValidatingConfigName = "muster-validating-webhook"

// CRDName is the TrainingJob CRD, whose conversion webhook's caBundle the
// rotator keeps current too.
const CRDName = "trainingjobs.muster.dev"

// CertOptions say where the serving certificate lives.
type CertOptions struct {
	// Namespace holds the Service and the Secret: the operator's own.
	Namespace string
	// ServiceName is the Service the API server calls; the certificate is
	// issued for its DNS names.
	ServiceName string
	// SecretName is the Secret the rotator keeps the CA and the serving
	// certificate in. It must exist: the rotator fills it, it does not
	// create it.
	SecretName string
	// CertDir is where that Secret is mounted, the webhook server's CertDir.
	CertDir string
	// HostNames are more DNS names for the certificate, for configurations
	// that call the webhook by URL rather than through the Service.
	HostNames []string
	// ValidatingConfig names the webhook configuration that gets the CA;
	// ValidatingConfigName when empty.
	ValidatingConfig string
	// Conversion is whether the CRD converts through the operator
	// (ConversionConfigured), and so gets the CA too.
	Conversion bool
	// MetricsServiceName, if set, is the Service of the operator's metrics
	// endpoint, which serves with the same certificate: it names that
	// Service's DNS names too.
	MetricsServiceName string
	// ControllerName names the rotator's controller, unique in a process
	// ("cert-rotator" when empty): tests run several rotators in one.
	ControllerName string
}

// ConversionConfigured is whether the TrainingJob CRD calls a conversion
// webhook: config/webhook sets one up to serve v1alpha1; the Helm chart
// and config/default serve v1beta1 alone and have none, and the rotator
// must not wait for a CA it has nowhere to write.
func ConversionConfigured(ctx context.Context, r client.Reader) (bool, error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := r.Get(ctx, client.ObjectKey{Name: CRDName}, crd); err != nil {
		return false, fmt.Errorf("reading the CRD %s: %w", CRDName, err)
	}
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	return strategy == "Webhook", nil
}

// RBAC of the rotator. Its cache lists and watches Secrets in its
// namespace and every webhook configuration, which RBAC cannot limit by
// name; what it writes can be: its Secret and the configuration of
// config/webhook.
// +kubebuilder:rbac:groups="",namespace=muster-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=muster-system,resources=secrets,resourceNames=muster-webhook-cert,verbs=update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=muster-validating-webhook,verbs=update
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=trainingjobs.muster.dev,verbs=update

// AddCertRotator makes mgr keep a self-signed CA and a serving certificate
// for the webhook Service in the Secret, and the CA in the webhook
// configuration. ready is closed once the certificate is in CertDir and
// the CA injected. It runs on every replica, not only the leader: each one
// serves webhooks and must not wait for the lease to get its certificate.
func AddCertRotator(mgr ctrl.Manager, o CertOptions, ready chan struct{}) error {
	svc := fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace)
	names := append([]string{svc + ".cluster.local"}, o.HostNames...)
	if o.MetricsServiceName != "" {
		metrics := fmt.Sprintf("%s.%s.svc", o.MetricsServiceName, o.Namespace)
		names = append(names, metrics, metrics+".cluster.local")
	}
	if o.ValidatingConfig == "" {
		o.ValidatingConfig = ValidatingConfigName
	}
	webhooks := []rotator.WebhookInfo{{Name: o.ValidatingConfig, Type: rotator.Validating}}
	if o.Conversion {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: CRDName, Type: rotator.CRDConversion})
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:             types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName},
		CertDir:               o.CertDir,
		CAName:                "muster-webhook-ca",
		CAOrganization:        "muster.dev",
		DNSName:               svc,
		ExtraDNSNames:         names,
		IsReady:               ready,
		Webhooks:              webhooks,
		FieldOwner:            "muster-operator",
		ControllerName:        o.ControllerName,
		RequireLeaderElection: false,
	})
	if err != nil {
		return fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	return nil
}

// AfterCertificate is r started only once ready is closed: a server that
// reads the rotator's certificate from its folder would fail to start
// before. It runs on every replica, leading or not, like the rotator.
func AfterCertificate(r manager.Runnable, ready <-chan struct{}) manager.Runnable {
	return &afterCertificate{r: r, ready: ready}
}

type afterCertificate struct {
	r     manager.Runnable
	ready <-chan struct{}
}

func (a *afterCertificate) Start(ctx context.Context) error {
	select {
	case <-a.ready:
	case <-ctx.Done():
		return nil
	}
	return a.r.Start(ctx)
}

func (a *afterCertificate) NeedLeaderElection() bool { return false }

// NewServer is a webhook server that starts listening only once ready is
// closed. Before that its CertDir may still be empty, and the server would
// fail to load its certificate and stop the manager.
func NewServer(o crwebhook.Options, ready <-chan struct{}) crwebhook.Server {
	return &waitingServer{Server: crwebhook.NewServer(o), ready: ready}
}

type waitingServer struct {
	crwebhook.Server
	ready <-chan struct{}
}

func (s *waitingServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	}
	ctrl.Log.WithName("webhook").Info("Serving certificate ready, starting the webhook server")
	return s.Server.Start(ctx)
}
