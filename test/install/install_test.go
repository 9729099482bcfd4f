// Package install installs Muster on a fresh local cluster as a platform
// team would, from a release cut from this checkout (tools/release, what
// `make release` runs): with install.yaml, with the packaged chart pulled
// from an OCI registry, and as an upgrade from the previous release with a
// job running across it; and it uninstalls each time, checking what is
// left. The operator runs from its image, pulled by digest: the process
// node runs the image's own root filesystem, as non-root with a read-only
// root, so these tests run the binary as shipped.
//
// The release is pushed to a registry the suite runs itself on 127.0.0.1
// (PUSH=1 REGISTRY=...), and copied to the local cluster's registry, which
// the process node treats as a mirror of every registry.
//
// It has its own cluster, started without the operator, rather than tests
// in test/e2e: that suite installs Muster with kustomize (config/dev), and
// the CRD, the webhook configurations and the ClusterRoles are
// cluster-wide, so a cluster holds one Muster. It needs root (the process
// node), and the helm binary `make helm` builds (MUSTER_HELM names it;
// without it the test builds it with make).
package install

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
	"github.com/muster-dev/muster/tools/release"
)

// version is the release the suite cuts from this checkout.
const version = "v0.2.0"

var (
	cluster *framework.Cluster
	// cs and kubectl are cluster.Clientset and cluster.Kubectl, under the
	// short names the tier calls them by.
	cs      kubernetes.Interface
	kubectl string
	helm    string
	// rel is the release, relDir its folder, registryHost the suite's own
	// registry it was pushed to.
	rel          *release.Manifest
	relDir       string
	registryHost string
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
	root, err := devcluster.FindRoot()
	if err != nil {
		return fail(err)
	}
	if helm, err = helmBinary(root); err != nil {
		return fail(err)
	}

	// The registry a release is pushed to: the suite's own, on loopback.
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	registryHost = strings.TrimPrefix(srv.URL, "http://")

	ctx := context.Background()
	c, stop, err := framework.StartCluster(ctx, "install", func(cfg *devcluster.Config) { cfg.NoOperator = true }, nil)
	if err != nil {
		return fail(err)
	}
	defer stop()
	cluster, cs, kubectl = c, c.Clientset, c.Kubectl

	// The release, as make release PUSH=1 REGISTRY=<the suite's> cuts it,
	// with the CLI for this machine only (the others are cross-builds
	// nothing here runs).
	relDir, err = os.MkdirTemp("", "muster-release-")
	if err != nil {
		return fail(err)
	}
	defer func() { _ = os.RemoveAll(relDir) }()
	rel, err = release.Run(ctx, release.Options{
		Root: cluster.Root, Out: relDir, Version: version, Registry: registryHost + "/muster", Push: true,
		CLIPlatforms: []string{"linux/" + runtime.GOARCH},
		Log:          func(f string, a ...any) { fmt.Fprintf(os.Stderr, "install release: "+f+"\n", a...) },
	})
	if err != nil {
		return fail(fmt.Errorf("cutting the release: %w", err))
	}
	if err := mirror(rel.Image); err != nil {
		return fail(err)
	}
	return m.Run()
}

// mirror copies an image from the suite's registry to the local cluster's,
// under the same path: the process node looks every image up there first.
func mirror(ref string) error {
	src, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	idx, err := remote.Index(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	dst, err := name.NewTag(cluster.RegistryAddr()+"/"+src.Context().RepositoryStr()+":mirrored", name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(dst, idx); err != nil {
		return fmt.Errorf("mirroring %s to the cluster's registry: %w", ref, err)
	}
	return nil
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

// cli is the muster CLI of the release, for this machine.
func cli() string {
	return filepath.Join(relDir, fmt.Sprintf("muster-%s-linux-%s", version, runtime.GOARCH))
}
