// Package e2e runs pods on the local cluster's process node: real
// processes, real DNS, real volumes. One cluster, started through
// tools/devcluster, serves the whole package and is always torn down.
// It needs root (pod network namespaces) and python3; without them the
// tests fail rather than skip.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/tools/devcluster"
)

var (
	cluster *devcluster.Config
	cs      kubernetes.Interface
	// hostDir is a host folder the tests may mount into pods.
	hostDir string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if err := preflight(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	cfg, err := devcluster.NewConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// Its own state dir: never the user's muster-dev cluster.
	cfg.StateDir = filepath.Join(cfg.Cache, "e2e")
	cfg.FakeNodes, cfg.GPUsPerNode = 2, 8
	// The gang schedulers and Kueue (schedulers_test.go).
	cfg.Schedulers, cfg.Kueue = devcluster.SchedulerNames, true
	cfg.Out = devcluster.PrefixWriter("e2e cluster: ")
	cluster = cfg

	// A run killed before its teardown (timeout, ^C twice) leaves a cluster
	// behind; the next run removes it first.
	ctx := context.Background()
	if err := devcluster.Down(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: removing a leftover cluster:", err)
		return 1
	}
	stopGuard := devcluster.GuardTeardown(cfg)
	defer stopGuard()
	defer func() {
		if err := devcluster.Down(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: tearing down:", err)
		}
	}()

	start := time.Now()
	if err := devcluster.Up(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the cluster:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster ready in %s\n", time.Since(start).Round(time.Second))
	restCfg, err := cfg.RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if cs, err = kubernetes.NewForConfig(restCfg); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if hostDir, err = os.MkdirTemp("", "muster-e2e-host-"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(hostDir) }()
	return m.Run()
}

// preflight fails early, with the reason, when the machine cannot run pods.
func preflight() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root: the process node gives every pod its own network namespace")
	}
	// The pods run the host's python3, and the training examples Debian's
	// torch.
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		return fmt.Errorf("/usr/bin/python3 with torch is missing (make deps installs python3-torch): %w", err)
	}
	// Debian's torch 1.13 starts torchrun on Python 3.11 only with
	// hack/torch-compat, which make deps installs where it is needed.
	check := `from torch.distributed.elastic.multiprocessing.api import Std
assert Std.from_str("0") is not None, "torchrun reads its default --redirects as None"`
	if out, err := exec.Command("/usr/bin/python3", "-c", check).CombinedOutput(); err != nil {
		return fmt.Errorf("torchrun cannot start on the host's torch (make deps installs hack/torch-compat for it): %w\n%s", err, out)
	}
	return nil
}
