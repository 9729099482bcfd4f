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

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

var (
	cluster *framework.Cluster
	// k8s is cluster.Client, under the short name the tier calls it by.
	k8s      client.Client
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
	// The monitor's informers log through controller-runtime.
	ctrllog.SetLogger(logr.Discard())
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

	c, stop, err := framework.StartCluster(context.Background(), "chaos", func(cfg *devcluster.Config) {
		cfg.FakeNodes, cfg.GPUsPerNode = 4, 8
		cfg.NoOperator = true
	}, setUp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer stop()
	cluster, k8s = c, c.Client
	defer func() { _ = os.RemoveAll(filepath.Dir(opBinary)) }()
	return m.Run()
}

// setUp installs the CRD and builds the operator.
func setUp(ctx context.Context, c *framework.Cluster) error {
	out, err := exec.CommandContext(ctx, c.Kubectl, "--kubeconfig="+c.Kubeconfig(),
		"apply", "--server-side", "-k", filepath.Join(c.Root, "config", "crd")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("installing the CRD: %w\n%s", err, out)
	}
	// The operator the image holds, byte for byte (devcluster builds the
	// image and keeps its binary beside it); run as a host process, so the
	// test can kill it at any moment and start it again. A copy, so a
	// rebuild of the image meanwhile cannot change it under the test.
	built, err := devcluster.Build(ctx, c.Config, devcluster.BuildSet{Operator: true})
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
	return os.WriteFile(opBinary, data, 0o755)
}
