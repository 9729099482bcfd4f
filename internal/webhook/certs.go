package webhook

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ValidatingConfigName is the webhook configuration in config/webhook,
// whose caBundle the rotator keeps current.
const ValidatingConfigName = "muster-validating-webhook"

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
}

// RBAC of the rotator. Its cache lists and watches Secrets in its
// namespace and every webhook configuration, which RBAC cannot limit by
// name; what it writes can be: its Secret and the configuration of
// config/webhook.
// +kubebuilder:rbac:groups="",namespace=muster-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=muster-system,resources=secrets,resourceNames=muster-webhook-cert,verbs=update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=muster-validating-webhook,verbs=update

// AddCertRotator makes mgr keep a self-signed CA and a serving certificate
// for the webhook Service in the Secret, and the CA in the webhook
// configuration. ready is closed once the certificate is in CertDir and
// the CA injected. It runs on every replica, not only the leader: each one
// serves webhooks and must not wait for the lease to get its certificate.
func AddCertRotator(mgr ctrl.Manager, o CertOptions, ready chan struct{}) error {
	svc := fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace)
	if o.ValidatingConfig == "" {
		o.ValidatingConfig = ValidatingConfigName
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName},
		CertDir:        o.CertDir,
		CAName:         "muster-webhook-ca",
		CAOrganization: "muster.dev",
		DNSName:        svc,
		ExtraDNSNames:  append([]string{svc + ".cluster.local"}, o.HostNames...),
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Name: o.ValidatingConfig, Type: rotator.Validating},
		},
		FieldOwner:            "muster-operator",
		RequireLeaderElection: false,
	})
	if err != nil {
		return fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	return nil
}

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
