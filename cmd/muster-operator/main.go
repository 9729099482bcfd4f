// Command muster-operator runs the Muster controllers.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/muster-dev/muster/api/v1alpha1"
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/controller"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/gang/backends"
	"github.com/muster-dev/muster/internal/leader"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/version"
	musterwebhook "github.com/muster-dev/muster/internal/webhook"
)

type flags struct {
	qps, statusQPS          float64
	burst, statusBurst      int
	concurrentReconciles    int
	createWorkers           int
	podEventBatch           time.Duration
	statusBatch             time.Duration
	statusBatchStart        bool
	metricsAddr, healthAddr string
	metricsServiceName      string
	pprofAddr               string
	metricsSecure           bool
	metricsCertDir          string
	leaderElect             bool
	leaderElectionNamespace string
	namespaces              string
	webhooks                webhookFlags
	gangs                   gangFlags
	kueue                   bool
	restarts                restartFlags
	zapOpts                 zap.Options
}

type restartFlags struct {
	watcherImage string
	defaultMode  string
}

type gangFlags struct {
	enabled                                []string
	defaultBackend                         string
	coschedulingName, volcanoSchedulerName string
}

type webhookFlags struct {
	enable                                      bool
	port                                        int
	certDir, serviceName, secretName, namespace string
	// metricsService is the metrics Service the certificate also names,
	// when the metrics endpoint serves with it.
	metricsService string
	hostNames      string
}

func parseFlags() *flags {
	f := &flags{}
	// The defaults suit a cluster of thousands of training pods: the
	// client's 5 QPS default would take minutes to start one large job,
	// and any rate below what the API server takes makes jobs wait on the
	// operator rather than on the cluster. The API server's priority and
	// fairness, not this limiter, is what shares it with other clients; the
	// cap on pod writes in flight (--pod-create-workers) keeps the operator
	// from holding the seats other clients' levels would borrow.
	flag.Float64Var(&f.qps, "kube-api-qps", 500, "queries per second to the API server for pod and Service writes and reads")
	flag.IntVar(&f.burst, "kube-api-burst", 1000, "burst of queries to the API server")
	flag.Float64Var(&f.statusQPS, "status-qps", 200, "queries per second for job status writes, budgeted apart so status never waits behind pod creates")
	flag.IntVar(&f.statusBurst, "status-burst", 400, "burst of job status writes")
	flag.IntVar(&f.concurrentReconciles, "concurrent-reconciles", 50, "jobs reconciled at the same time")
	flag.IntVar(&f.createWorkers, "pod-create-workers", 32, "pod creates, deletes and finalizer releases in flight at once, shared by all jobs in the order they ask")
	flag.DurationVar(&f.podEventBatch, "pod-event-batch", time.Second, "how long pod changes are gathered before their job is reconciled")
	flag.DurationVar(&f.statusBatch, "status-batch", 10*time.Second, "how long a job status that only shows progress (tasks starting, ready counts) may wait for the next write; phases, conditions, ends and restarts are written at once; 0 writes every change")
	flag.BoolVar(&f.statusBatchStart, "status-batch-start", false, "let a starting job's first status (Pending, its pods on their way) wait within --status-batch for the write that finds its pods running, so that a job whose pods run within it is written once; its acceptance is unseen meanwhile")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "address of the Prometheus metrics endpoint; 0 disables it")
	// Metrics tell who runs what where; by default only a client the API
	// server authenticates and authorizes (get on the non-resource URL
	// /metrics, e.g. through the muster-metrics-reader ClusterRole) reads
	// them, over TLS.
	flag.StringVar(&f.metricsServiceName, "metrics-service-name", "muster-operator-metrics", "the metrics endpoint's Service, which its certificate names when it serves with the webhook's (HTTPS, no --metrics-cert-dir, webhooks on)")
	flag.BoolVar(&f.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients the API server authenticates (TokenReview) and authorizes (SubjectAccessReview); false serves plain HTTP to anyone")
	flag.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "folder with tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate)")
	flag.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	// Profiles show the jobs' names and specs in memory, and are served
	// without authentication: off unless asked for, and best bound to
	// 127.0.0.1 (reached with kubectl port-forward).
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof endpoints (CPU, heap, goroutines), unauthenticated; 0 disables them")
	flag.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader so only one replica acts")
	flag.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's own)")
	flag.StringVar(&f.namespaces, "namespaces", "", "comma-separated namespaces to watch (default: all)")
	// Off by default: the webhook needs its configurations, Service and
	// Secret installed (config/webhook), and an operator run without them
	// must still work.
	flag.BoolVar(&f.webhooks.enable, "enable-webhooks", false, "serve the TrainingJob admission webhook and rotate its certificate")
	flag.IntVar(&f.webhooks.port, "webhook-port", 9443, "port the admission webhook is served on")
	flag.StringVar(&f.webhooks.certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "folder where the webhook's certificate Secret is mounted")
	flag.StringVar(&f.webhooks.serviceName, "webhook-service-name", "muster-webhook", "Service the API server calls the webhook through; the certificate names it")
	flag.StringVar(&f.webhooks.secretName, "webhook-secret-name", "muster-webhook-cert", "Secret the certificate rotator keeps the CA and serving certificate in")
	flag.StringVar(&f.webhooks.namespace, "webhook-namespace", "", "namespace of the webhook Service and Secret (default: the operator's own)")
	flag.StringVar(&f.webhooks.hostNames, "webhook-host-names", "", "more DNS names for the webhook's certificate, comma-separated, for configurations that call it by URL (e.g. localhost on a node where the API server reaches it through a hostPort)")
	flag.Func("gang-backend-enable", "enable a gang backend: Native, Coscheduling or Volcano (repeatable); its RBAC comes with config/gang/<backend>", func(v string) error {
		f.gangs.enabled = append(f.gangs.enabled, v)
		return nil
	})
	flag.BoolVar(&f.kueue, "kueue-enable", false, "put jobs labelled kueue.x-k8s.io/queue-name behind Kueue's quotas (Kueue's CRDs must be installed, and Kueue configured with the external framework TrainingJob.v1beta1.muster.dev); its RBAC comes with config/queue/kueue")
	flag.StringVar(&f.gangs.defaultBackend, "default-gang-backend", "None", "gang backend of jobs whose spec.scheduling.backend is unset; None or an enabled backend")
	flag.StringVar(&f.gangs.coschedulingName, "coscheduling-scheduler-name", "scheduler-plugins-scheduler", "schedulerName of the scheduler that runs the coscheduling plugin")
	flag.StringVar(&f.gangs.volcanoSchedulerName, "volcano-scheduler-name", "volcano", "schedulerName of the Volcano scheduler")
	f.zapOpts = zap.Options{Development: false, Level: zapcore.InfoLevel}
	flag.StringVar(&f.restarts.watcherImage, "restart-watcher-image", "", "image that runs the restart watcher of pods that restart in place (it runs `muster-operator restart-watcher`); empty: the image of the operator's own container, read from its pod (POD_NAME); if that cannot be read, no job restarts in place")
	flag.StringVar(&f.restarts.defaultMode, "default-restart-mode", string(controller.RestartModeAuto), "restart mode of jobs whose spec.failurePolicy.restartMode is unset: InPlace, Recreate, or Auto: InPlace when every Ready, schedulable node declares RestartAllContainersOnContainerExits, else Recreate, decided when a job's pods are made (it needs get, list and watch on nodes; without them, Recreate)")
	f.zapOpts.BindFlags(flag.CommandLine) // --zap-log-level sets the log level
	flag.Parse()
	return f
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == restartWatcherCommand {
		os.Exit(runRestartWatcher(os.Args[2:]))
	}
	if err := run(parseFlags()); err != nil {
		fmt.Fprintln(os.Stderr, "muster-operator:", err)
		os.Exit(1)
	}
}

func run(f *flags) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zapOpts)))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := musterv1.AddToScheme(scheme); err != nil {
		return err
	}
	// v1alpha1 too: the webhook converts it to v1beta1 and back.
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	cfg.UserAgent = "muster-operator"

	namespaces := splitNames(f.namespaces)
	// The rotator closes certsReady once the serving certificate is on disk
	// and its CA is in the webhook configurations; the server waits for it.
	var webhookServer webhook.Server
	certsReady := make(chan struct{})
	if f.webhooks.enable {
		webhookServer = musterwebhook.NewServer(webhook.Options{Port: f.webhooks.port, CertDir: f.webhooks.certDir}, certsReady)
	}
	gangs, inPlace, err := jobOptions(f, cfg)
	if err != nil {
		return err
	}
	// The operator makes its own Lease lock, so that its writes can be
	// fenced by the lock's renewals (internal/leader).
	var lock *leader.Lock
	if f.leaderElect {
		ns, err := operatorNamespace(f.leaderElectionNamespace)
		if err != nil {
			return fmt.Errorf("--leader-election-namespace is not set and %w", err)
		}
		var stopEvents func()
		if lock, stopEvents, err = leader.NewLeaseLock(cfg, ns, leaseName, leader.DefaultTiming); err != nil {
			return fmt.Errorf("creating the leader election lock: %w", err)
		}
		defer stopEvents()
	}
	timing := leader.DefaultTiming
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		WebhookServer:          webhookServer,
		Cache:                  controller.CacheOptions(namespaces, gangs, f.kueue),
		NewClient:              controller.NewClient,
		Metrics:                managerMetrics(f),
		HealthProbeBindAddress: f.healthAddr,
		PprofBindAddress:       f.pprofAddr,
		LeaderElection:         f.leaderElect,
		// The Lease is installed with the operator (config/manager/lease.yaml),
		// so that uninstalling removes it; the operator only updates it.
		LeaderElectionResourceLockInterface: lockOrNil(lock),
		LeaderElectionReleaseOnCancel:       true,
		LeaseDuration:                       &timing.LeaseDuration,
		RenewDeadline:                       &timing.RenewDeadline,
		RetryPeriod:                         &timing.RetryPeriod,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}

	statusCfg := rest.CopyConfig(cfg)
	statusCfg.QPS, statusCfg.Burst = float32(f.statusQPS), f.statusBurst
	statusClient, err := client.New(statusCfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating status client: %w", err)
	}
	if err := controller.Setup(mgr, controller.Options{
		MaxConcurrentReconciles: f.concurrentReconciles,
		CreateWorkers:           f.createWorkers,
		PodEventBatch:           f.podEventBatch,
		StatusBatch:             f.statusBatch,
		StatusBatchStart:        f.statusBatchStart,
		StatusClient:            statusClient,
		Gang:                    gangs,
		Kueue:                   f.kueue,
		Fence:                   fenceOf(lock),
		InPlace:                 inPlace,
	}); err != nil {
		return fmt.Errorf("setting up controllers: %w", err)
	}
	if err := addMetrics(mgr, f, certsReady); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if f.webhooks.enable {
		w := f.webhooks
		if servesMetricsWithWebhookCert(f) {
			w.metricsService = f.metricsServiceName
		}
		if err := setupWebhooks(mgr, w, certsReady, gangs.Default, slices.Collect(maps.Keys(gangs.Backends))); err != nil {
			return err
		}
	}
	if err := mgr.Add(&selfAnnotator{client: mgr.GetClient(), log: ctrl.Log.WithName("version")}); err != nil {
		return err
	}
	v := version.Get()
	ctrl.Log.Info("Starting muster-operator", "version", v.Version, "commit", v.Commit, "go", v.GoVersion, "platform", v.Platform)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// Checking a metrics client's token and its right to read /metrics:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves metrics over HTTPS behind the API server's
// authentication and authorization unless --metrics-secure=false.
func metricsOptions(f *flags) metricsserver.Options {
	o := metricsserver.Options{BindAddress: f.metricsAddr}
	if f.metricsSecure {
		o.SecureServing = true
		o.CertDir = f.metricsCertDir
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// servesMetricsWithWebhookCert is whether the metrics endpoint uses the
// webhook's certificate: over HTTPS, with no certificate of its own given,
// and the webhook's rotator running. Its CA (ca.crt of the rotator's
// Secret) then verifies the endpoint too, for a scraper (the chart's
// ServiceMonitor) to check whom it talks to; otherwise the certificate is
// self-signed.
func servesMetricsWithWebhookCert(f *flags) bool {
	return f.metricsSecure && f.metricsCertDir == "" && f.webhooks.enable && f.metricsAddr != "0"
}

// managerMetrics is the manager's own metrics server's options: none when
// the operator serves them with the webhook's certificate (addMetrics).
func managerMetrics(f *flags) metricsserver.Options {
	if servesMetricsWithWebhookCert(f) {
		return metricsserver.Options{BindAddress: "0"}
	}
	return metricsOptions(f)
}

// addMetrics serves the metrics with the webhook's certificate once the
// rotator has it in place (certsReady): read from the folder the Secret is
// mounted in, and read again whenever it changes.
func addMetrics(mgr ctrl.Manager, f *flags, certsReady <-chan struct{}) error {
	if !servesMetricsWithWebhookCert(f) {
		return nil
	}
	o := metricsOptions(f)
	o.CertDir = f.webhooks.certDir
	srv, err := metricsserver.NewServer(o, mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("creating the metrics server: %w", err)
	}
	return mgr.Add(musterwebhook.AfterCertificate(srv, certsReady))
}

// setupWebhooks registers the admission webhook and the rotator of its
// certificate. The pod is not ready until the server listens, so the
// Service sends the API server nowhere else.
func setupWebhooks(mgr ctrl.Manager, f webhookFlags, certsReady chan struct{}, defaultBackend musterv1.GangBackend, gangBackends []musterv1.GangBackend) error {
	ns, err := operatorNamespace(f.namespace)
	if err != nil {
		return fmt.Errorf("--webhook-namespace is not set and %w", err)
	}
	conversion, err := musterwebhook.ConversionConfigured(context.Background(), mgr.GetAPIReader())
	if err != nil {
		return err
	}
	if err := musterwebhook.AddCertRotator(mgr, musterwebhook.CertOptions{
		Namespace:          ns,
		ServiceName:        f.serviceName,
		SecretName:         f.secretName,
		CertDir:            f.certDir,
		HostNames:          splitNames(f.hostNames),
		Conversion:         conversion,
		MetricsServiceName: f.metricsService,
	}, certsReady); err != nil {
		return err
	}
	if err := musterwebhook.Register(mgr, defaultBackend, gangBackends...); err != nil {
		return fmt.Errorf("registering the admission webhook: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	ctrl.Log.Info("Admission webhook enabled", "namespace", ns, "service", f.serviceName, "secret", f.secretName, "port", f.port)
	return nil
}

// gangOptions makes the enabled gang backends' adapters and checks the
// default is one of them.
func gangOptions(f gangFlags) (controller.GangOptions, error) {
	var enabled []musterv1.GangBackend
	for _, name := range f.enabled {
		b, err := gang.Parse(name)
		if err != nil {
			return controller.GangOptions{}, fmt.Errorf("--gang-backend-enable: %w", err)
		}
		enabled = append(enabled, b)
	}
	adapters, err := backends.New(enabled, backends.Options{CoschedulingSchedulerName: f.coschedulingName, VolcanoSchedulerName: f.volcanoSchedulerName})
	if err != nil {
		return controller.GangOptions{}, fmt.Errorf("--gang-backend-enable: %w", err)
	}
	def, err := gang.Parse(f.defaultBackend)
	if err != nil {
		return controller.GangOptions{}, fmt.Errorf("--default-gang-backend: %w", err)
	}
	if _, ok := adapters[def]; def != musterv1.GangNone && !ok {
		return controller.GangOptions{}, fmt.Errorf("--default-gang-backend=%s is not enabled: add --gang-backend-enable=%s", def, def)
	}
	// The restart scope a v1alpha1 job implies depends on its gang
	// backend, this one when it names none; set once, before the
	// conversion webhook serves.
	v1alpha1.DefaultGangBackend = v1alpha1.GangBackend(def)
	return controller.GangOptions{Default: def, Backends: adapters}, nil
}

// operatorNamespace is flag, or if empty the namespace the operator's pod
// runs in.
func operatorNamespace(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return "", fmt.Errorf("the operator's namespace is unknown: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// serviceAccountNamespace holds the namespace of the pod it is mounted in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// splitNames splits a comma-separated list, dropping empty names.
func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// leaseName is the leader election Lease's name.
const leaseName = "muster-operator.muster.dev"

// lockOrNil is lock as the manager's option: nil, not a nil *Lock, when
// there is no election.
func lockOrNil(lock *leader.Lock) resourcelock.Interface {
	if lock == nil {
		return nil
	}
	return lock
}

// fenceOf is the check every write of the controllers makes: none
// without an election.
func fenceOf(lock *leader.Lock) leader.Fence {
	if lock == nil {
		return nil
	}
	return lock.Left
}

// jobOptions are the gang backends and the in-place restarts the flags
// offer jobs.
func jobOptions(f *flags, cfg *rest.Config) (controller.GangOptions, plan.InPlaceSupport, error) {
	gangs, err := gangOptions(f.gangs)
	if err != nil {
		return controller.GangOptions{}, plan.InPlaceSupport{}, err
	}
	inPlace, err := inPlaceSupport(f.restarts)
	if err == nil && inPlace.WatcherImage == "" {
		inPlace.WatcherImage = ownImage(context.Background(), cfg, ctrl.Log.WithName("restarts"))
	}
	return gangs, inPlace, err
}

// inPlaceSupport is what the flags offer for restarting pods in place.
func inPlaceSupport(f restartFlags) (plan.InPlaceSupport, error) {
	mode := musterv1.RestartMode(f.defaultMode)
	if mode != controller.RestartModeAuto && mode != musterv1.RestartModeInPlace && mode != musterv1.RestartModeRecreate {
		return plan.InPlaceSupport{}, fmt.Errorf("--default-restart-mode must be Auto, InPlace or Recreate, not %q", f.defaultMode)
	}
	return plan.InPlaceSupport{WatcherImage: f.watcherImage, Default: mode}, nil
}
