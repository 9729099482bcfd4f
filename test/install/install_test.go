// Package install installs Muster on the local cluster with the Helm chart,
// as a platform engineer would with the helm command, runs a job through
// it, and uninstalls it.
//
// It has its own cluster, started without the operator, rather than a test
// in test/e2e: that suite installs Muster with kustomize (config/dev), and
// the CRD, the webhook configurations and the ClusterRoles are
// cluster-wide, so a cluster holds one Muster; a second install there
// would clash with the first, and uninstalling it would leave the e2e
// tests without their operator. A cluster starts in about a minute once
// its binaries are cached. It needs root (the process node), and the helm
// binary that `make helm` builds (MUSTER_HELM names it; without it the
// test builds it with make).
package install

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/tools/devcluster"
)

var (
	cluster *devcluster.Config
	cs      kubernetes.Interface
	kubectl string
	helm    string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "install:", err)
		return 1
	}
	if os.Geteuid() != 0 {
		return fail(fmt.Errorf("must run as root: the process node gives every pod its own network namespace"))
	}
	cfg, err := devcluster.NewConfig()
	if err != nil {
		return fail(err)
	}
	// Its own state dir: never the user's muster-dev cluster. One fake
	// node, for the operator's second replica (see install_test.go).
	cfg.StateDir = filepath.Join(cfg.Cache, "install")
	cfg.FakeNodes, cfg.GPUsPerNode = 1, 0
	cfg.NoOperator = true
	cfg.Out = devcluster.PrefixWriter("install cluster: ")
	cluster = cfg
	if helm, err = helmBinary(cfg.Root); err != nil {
		return fail(err)
	}

	ctx := context.Background()
	if err := devcluster.Down(ctx, cfg); err != nil {
		return fail(fmt.Errorf("removing a leftover cluster: %w", err))
	}
	stopGuard := devcluster.GuardTeardown(cfg)
	defer stopGuard()
	defer func() {
		if err := devcluster.Down(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "install: tearing down:", err)
		}
	}()
	if err := devcluster.Up(ctx, cfg); err != nil {
		return fail(fmt.Errorf("starting the cluster: %w", err))
	}
	// The chart's image runs the operator binary the process node maps it
	// to (devcluster.OperatorImage): built from this checkout, as the e2e
	// suite's is.
	bins, err := devcluster.Build(ctx, cfg, devcluster.BuildSet{Operator: true})
	if err != nil {
		return fail(err)
	}
	kubectl = bins.Kubectl()
	restCfg, err := cfg.RESTConfig()
	if err != nil {
		return fail(err)
	}
	if cs, err = kubernetes.NewForConfig(restCfg); err != nil {
		return fail(err)
	}
	return m.Run()
}

// helmBinary is $MUSTER_HELM, else the helm `make helm` builds (once) and
// prints.
func helmBinary(root string) (string, error) {
	if h := os.Getenv("MUSTER_HELM"); h != "" {
		return h, nil
	}
	cmd := exec.Command("make", "-s", "--no-print-directory", "helm")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building helm (make helm): %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
