// Package chaos runs the operator on the local cluster while the test
// crashes it and the cluster under it: the operator is SIGKILLed at seeded
// random points, kube-apiserver and etcd are killed and started again, the
// process node restarts, and the operator's job watch lags behind its pod
// watch. A monitor checks the invariants the whole time (monitor_test.go),
// and every job must end with the counters an undisturbed run records.
//
// The operator runs as a process of this test (not as the process node's
// pod), so that a kill lands at once and its restart is immediate. The
// cluster uses KWOK nodes, whose pods finish when a test annotates them,
// and the process node, for the node-restart test. It needs root.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/tools/devcluster"
)

var (
	cluster  *devcluster.Config
	restCfg  *rest.Config
	cs       kubernetes.Interface
	k8s      client.Client
	scheme   = runtime.NewScheme()
	opBinary string
	// seed drives every random choice of the tier: MUSTER_CHAOS_SEED
	// replays a run (the kill points, not the interleaving the machine
	// gives them).
	seed uint64
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "chaos: must run as root: the local cluster's process node needs it")
		return 1
	}
	seed = rand.Uint64() % 1_000_000
	if s := os.Getenv("MUSTER_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos: MUSTER_CHAOS_SEED:", err)
			return 1
		}
		seed = v
	}
	fmt.Fprintf(os.Stderr, "chaos: seed %d (MUSTER_CHAOS_SEED=%d replays it)\n", seed, seed)
	_ = clientgoscheme.AddToScheme(scheme)
	_ = musterv1.AddToScheme(scheme)

	cfg, err := devcluster.NewConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	cfg.StateDir = filepath.Join(cfg.Cache, "chaos")
	cfg.FakeNodes, cfg.GPUsPerNode = 4, 8
	cfg.NoOperator = true
	cfg.Out = devcluster.PrefixWriter("chaos cluster: ")
	cluster = cfg

	ctx := context.Background()
	if err := devcluster.Down(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: removing a leftover cluster:", err)
		return 1
	}
	stopGuard := devcluster.GuardTeardown(cfg)
	defer stopGuard()
	defer func() {
		if err := devcluster.Down(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: tearing down:", err)
		}
	}()
	if err := setUp(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(filepath.Dir(opBinary)) }()
	return m.Run()
}

// setUp starts the cluster, installs the CRD and builds the operator.
func setUp(ctx context.Context, cfg *devcluster.Config) error {
	start := time.Now()
	if err := devcluster.Up(ctx, cfg); err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	var err error
	if restCfg, err = cfg.RESTConfig(); err != nil {
		return err
	}
	if cs, err = kubernetes.NewForConfig(restCfg); err != nil {
		return err
	}
	if k8s, err = client.New(restCfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	bins, _, err := cfg.BinaryPaths()
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bins.Kubectl(), "--kubeconfig="+cfg.Kubeconfig(),
		"apply", "--server-side", "-k", filepath.Join(cfg.Root, "config", "crd")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("installing the CRD: %w\n%s", err, out)
	}
	// The operator the image holds, byte for byte (devcluster builds the
	// image and keeps its binary beside it); run as a host process, so the
	// test can kill it at any moment and start it again. A copy, so a
	// rebuild of the image meanwhile cannot change it under the test.
	built, err := devcluster.Build(ctx, cfg, devcluster.BuildSet{Operator: true})
	if err != nil {
		return fmt.Errorf("building the operator image: %w", err)
	}
	dir, err := os.MkdirTemp("", "muster-chaos-")
	if err != nil {
		return err
	}
	opBinary = filepath.Join(dir, "muster-operator")
	data, err := os.ReadFile(built.Operator)
	if err != nil {
		return err
	}
	if err := os.WriteFile(opBinary, data, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "chaos: cluster ready in %s\n", time.Since(start).Round(time.Second))
	return nil
}
