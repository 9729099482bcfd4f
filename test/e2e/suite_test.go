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
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

var (
	cluster *framework.Cluster
	// cs is cluster.Clientset, under the short name the tests call it by.
	cs kubernetes.Interface
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
	c, stop, err := framework.StartCluster(context.Background(), "e2e", func(cfg *devcluster.Config) {
		cfg.FakeNodes, cfg.GPUsPerNode = 2, 8
		// The gang schedulers and Kueue (schedulers_test.go).
		cfg.Schedulers, cfg.Kueue = devcluster.SchedulerNames, true
	}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer stop()
	cluster, cs = c, c.Clientset
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
