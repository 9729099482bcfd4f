// Package integration runs the operator against a real kube-apiserver and
// etcd (envtest with locally built binaries) and a real
// kube-controller-manager for garbage collection. The admission webhook
// is installed as in production (config/webhook), served from the test
// process, so every test's writes pass through it. Tests drive pod phases
// themselves: there is no kubelet.
package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/muster-dev/muster/api/v1alpha1"
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/controller"
	"github.com/muster-dev/muster/internal/gang/backends"
	"github.com/muster-dev/muster/internal/plan"
	musterwebhook "github.com/muster-dev/muster/internal/webhook"
	"github.com/muster-dev/muster/test/framework"
)

var (
	cfg    *rest.Config
	k8s    client.Client
	scheme = framework.Scheme()
	// operator is the running operator; tests that restart it replace it.
	operator *runningOperator
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	bin := os.Getenv("MUSTER_K8S_BIN")
	if bin == "" {
		fmt.Fprintln(os.Stderr, "MUSTER_K8S_BIN is not set: run `make test-integration`, which builds kube-apiserver and etcd and points it there")
		return 1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))
	// Besides the served version, the one the conversion webhook converts
	// from.
	must(v1alpha1.AddToScheme(scheme))

	coschedulingCRD, err := moduleFile(schedulerPluginsModule, "manifests", "coscheduling", "crd.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "finding the coscheduling PodGroup CRD:", err)
		return 1
	}
	kueueCRDs, err := moduleFile(kueueModule, "config", "components", "crd", "bases")
	if err != nil {
		fmt.Fprintln(os.Stderr, "finding Kueue's CRDs:", err)
		return 1
	}
	volcanoCRD, err := moduleFile(volcanoModule, "config", "crd", "volcano", "bases", "scheduling.volcano.sh_podgroups.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "finding Volcano's PodGroup CRD:", err)
		return 1
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases"), coschedulingCRD, volcanoCRD,
			filepath.Join(kueueCRDs, "kueue.x-k8s.io_workloads.yaml"), filepath.Join(kueueCRDs, "kueue.x-k8s.io_resourceflavors.yaml")},
		ErrorIfCRDPathMissing: true,
		// With both versions in the scheme, envtest points the CRD's
		// conversion at the webhook server below (/convert), as
		// config/webhook does in a cluster.
		Scheme: scheme,
		// envtest serves the webhook on 127.0.0.1 with certificates of its
		// own, and points the configurations' clientConfig there.
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("..", "..", "config", "webhook", "webhooks.yaml")},
		},
	}
	// The native gang API: the Workload and PodGroup kinds of
	// scheduling.k8s.io/v1alpha2.
	env.ControlPlane.GetAPIServer().Configure().
		Append("feature-gates", "GenericWorkload=true").
		Append("runtime-config", "scheduling.k8s.io/v1alpha2=true")
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		// Start leaves etcd and the API server running when, say, the CRDs
		// fail to install.
		_ = env.Stop()
		return 1
	}
	defer func() { _ = env.Stop() }()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "creating client:", err)
		return 1
	}
	stopGC, err := startGarbageCollector(env, bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-controller-manager:", err)
		return 1
	}
	defer stopGC()

	stopWebhook, err := startWebhook(&env.WebhookInstallOptions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the admission webhook:", err)
		return 1
	}
	defer stopWebhook()

	operator, err = startOperator()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting operator:", err)
		return 1
	}
	defer func() { operator.stop() }()
	return m.Run()
}

func zapLevel() zapcore.Level {
	if os.Getenv("MUSTER_TEST_VERBOSE") != "" {
		return -4
	}
	return 0
}

// startGarbageCollector runs kube-controller-manager with only the garbage
// collector, so owner references really delete children, and the PodGroup
// protection controller, which lets a native PodGroup go once no pod
// names it.
func startGarbageCollector(env *envtest.Environment, bin string) (func(), error) {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "kcm", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "muster-kcm-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+path, "--controllers=garbagecollector,namespace,podgroup-protection-controller", "--feature-gates=GenericWorkload=true", "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=0", "--concurrent-gc-syncs=5", "-v=0")
	logFile, err := os.Create(filepath.Join(dir, "kcm.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// startWebhook serves the admission webhook in a manager of its own, so
// tests that restart the operator never find it down. It returns once the
// server accepts connections.
func startWebhook(o *envtest.WebhookInstallOptions) (func(), error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir,
		}),
	})
	if err != nil {
		return nil, err
	}
	if err := musterwebhook.Register(mgr, musterv1.GangNone, musterv1.GangNative, musterv1.GangCoscheduling, musterv1.GangVolcano); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "webhook stopped with:", err)
		}
	}
	started := mgr.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	}); err != nil {
		stop()
		return nil, fmt.Errorf("the webhook server did not start: %w", err)
	}
	return stop, nil
}

type runningOperator struct {
	cancel context.CancelFunc
	done   chan error
}

// startOperator runs the operator's controllers with the same Setup and
// cache options as the binary.
func startOperator(edits ...func(*controller.Options)) (*runningOperator, error) {
	return startOperatorWith(nil, edits...)
}

// startOperatorWith is startOperator with the manager's options edited too
// (leader election, say).
func startOperatorWith(manager func(*ctrl.Options), edits ...func(*controller.Options)) (*runningOperator, error) {
	mo := ctrl.Options{
		Scheme:     scheme,
		Cache:      controller.CacheOptions(nil, gangOptions(), true),
		NewClient:  controller.NewClient,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if manager != nil {
		manager(&mo)
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, err
	}
	opts := controller.Options{ExpectationTimeout: 10 * time.Second, Gang: gangOptions(), Kueue: true,
		InPlace: plan.InPlaceSupport{WatcherImage: "muster-operator:test", Default: musterv1.RestartModeRecreate}}
	for _, edit := range edits {
		edit(&opts)
	}
	if err := controller.Setup(mgr, opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &runningOperator{cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	return op, nil
}

func (o *runningOperator) stop() {
	o.cancel()
	if err := <-o.done; err != nil {
		fmt.Fprintln(os.Stderr, "operator stopped with:", err)
	}
}

// gangOptions enables the gang backends whose APIs the test API server
// serves: the native one, and the coscheduling plugin's and Volcano's
// PodGroup CRDs.
func gangOptions() controller.GangOptions {
	adapters, err := backends.New([]musterv1.GangBackend{musterv1.GangNative, musterv1.GangCoscheduling, musterv1.GangVolcano}, backends.Options{})
	must(err)
	return controller.GangOptions{Default: musterv1.GangNone, Backends: adapters}
}

// schedulerPluginsModule is the release of kubernetes-sigs/scheduler-plugins
// whose coscheduling PodGroup CRD the tests install, read from the Go
// module cache.
const schedulerPluginsModule = "sigs.k8s.io/scheduler-plugins@v0.34.7"

// kueueModule is the Kueue release whose Workload and ResourceFlavor CRDs
// the tests install; the tests act as Kueue itself, admitting and evicting.
const kueueModule = "sigs.k8s.io/kueue@v0.16.6"

// volcanoModule is the Volcano release whose PodGroup CRD the tests
// install; the tests act as its scheduler, moving PodGroups through their
// phases.
const volcanoModule = "volcano.sh/volcano@v1.14.1"

// moduleFile downloads a module (a no-op once cached) and returns the path
// of one of its files.
func moduleFile(module string, path ...string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Error != "" {
		return "", errors.New(m.Error)
	}
	return filepath.Join(append([]string{m.Dir}, path...)...), nil
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// interceptWrites makes the operator's client pass every write (create,
// update, patch, delete, of an object or a subresource) to objects of
// namespace ns through write first: an error from it fails the write. With
// it a test counts what an operator does, or stops it between deciding and
// acting, without a hook in the operator's code.
func interceptWrites(ns string, write func(obj client.Object) error) func(*ctrl.Options) {
	check := func(obj client.Object) error {
		if obj.GetNamespace() != ns {
			return nil
		}
		return write(obj)
	}
	funcs := interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
			if err := check(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, o...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.UpdateOption) error {
			if err := check(obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, o...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
			if err := check(obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, p, o...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteOption) error {
			if err := check(obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, o...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, o ...client.SubResourceUpdateOption) error {
			if err := check(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, o...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
			if err := check(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, p, o...)
		},
	}
	return func(mo *ctrl.Options) {
		mo.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := controller.NewClient(cfg, o)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(clientWithWatch{c}, funcs), nil
		}
	}
}

// clientWithWatch lets the interceptor wrap a manager's client, which does
// not watch: the operator's watches go through its cache, never the client.
type clientWithWatch struct{ client.Client }

func (clientWithWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the operator's client does not watch")
}
