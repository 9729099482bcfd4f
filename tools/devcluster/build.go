package devcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Binaries are the executables the cluster runs, all under the cache.
type Binaries struct {
	// ControlPlane holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kubectl (also what envtest-based tests point at).
	ControlPlane string `json:"controlPlane"`
	CoreDNS      string `json:"coreDNS"`
	KWOK         string `json:"kwok"`
	// ProcNode is empty when tools/procnode does not exist.
	ProcNode string `json:"procNode,omitempty"`
	// Operator is the muster-operator binary of the operator image, which
	// is kept beside it as an OCI layout (registry.go).
	Operator string `json:"operator"`
	// Registry is the local registry (tools/registry).
	Registry string `json:"registry"`
	// Coscheduling is kube-scheduler with scheduler-plugins' Coscheduling
	// plugin, Volcano the folder of vc-scheduler and vc-controller-manager,
	// Kueue Kueue's controller manager (see extras.go).
	Coscheduling string `json:"coscheduling,omitempty"`
	Volcano      string `json:"volcano,omitempty"`
	Kueue        string `json:"kueue,omitempty"`
}

// Kubectl is the kubectl matching the control plane.
func (b *Binaries) Kubectl() string { return filepath.Join(b.ControlPlane, "kubectl") }

// BuildSet says which binaries to build.
type BuildSet struct {
	ControlPlane, CoreDNS, KWOK, ProcNode, Operator bool
	// The optional components, built only when asked for.
	Coscheduling, Volcano, Kueue bool
}

// BuildAll is what `muster-dev up` needs without optional components.
var BuildAll = BuildSet{ControlPlane: true, CoreDNS: true, KWOK: true, ProcNode: true, Operator: true}

var controlPlaneBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}

// Build builds what is missing from the cache and returns where everything
// is. Versioned binaries are built once; the process node and the operator
// come from this repository's sources and are rebuilt incrementally each
// time (a no-op when nothing changed).
func Build(ctx context.Context, c *Config, set BuildSet) (*Binaries, error) {
	b, v, err := c.BinaryPaths()
	if err != nil {
		return nil, err
	}
	if set.ControlPlane && !isExecutable(filepath.Join(b.ControlPlane, "kube-apiserver")) {
		c.logf("first run: building Kubernetes %s, etcd %s and the cluster's other parts from source, "+
			"about 10 minutes on 2 cores (15 with other builds running); they are cached in %s, so later runs start in seconds", v.Kubernetes, v.Etcd, c.Cache)
	}
	if set.ControlPlane {
		c.logf("%-24s binaries in %s", "kubernetes "+v.Kubernetes, b.ControlPlane)
		clusterSrc := filepath.Join(c.Root, "tools", "cluster")
		for _, name := range controlPlaneBinaries {
			pkg, ld, version := "k8s.io/kubernetes/cmd/"+name, versionLDFlags(v.Kubernetes), v.Kubernetes
			if name == "etcd" {
				// etcd's version is a constant in its sources.
				pkg, ld, version = "./cmd/etcd", "-s -w", v.Etcd
			}
			err := c.buildOnce(ctx, filepath.Join(b.ControlPlane, name), name+" "+version,
				func(out string) error {
					return goCmd(ctx, clusterSrc, nil, "build", "-trimpath", "-ldflags", ld, "-o", out, pkg)
				})
			if err != nil {
				return nil, err
			}
		}
	}
	for _, t := range []struct {
		want        bool
		path, pkg   string
		version     string
		description string
	}{
		{set.CoreDNS, b.CoreDNS, "github.com/coredns/coredns", CoreDNSVersion, "coredns " + CoreDNSVersion},
		{set.KWOK, b.KWOK, "sigs.k8s.io/kwok/cmd/kwok", KWOKVersion, "kwok " + KWOKVersion},
	} {
		if !t.want {
			continue
		}
		c.logf("%-24s binary in %s", t.description, filepath.Dir(t.path))
		err := c.buildOnce(ctx, t.path, t.description, func(out string) error {
			return goInstall(ctx, out, t.pkg+"@"+t.version)
		})
		if err != nil {
			return nil, err
		}
	}
	if err := c.buildExtras(ctx, b, set); err != nil {
		return nil, err
	}
	if set.ProcNode && b.ProcNode != "" {
		if err := c.buildFromSource(ctx, filepath.Join(c.Root, "tools", "procnode"), ".", b.ProcNode); err != nil {
			return nil, err
		}
	}
	if set.ProcNode {
		if err := c.buildFromSource(ctx, c.Root, "./tools/registry", b.Registry); err != nil {
			return nil, err
		}
	}
	if set.Operator {
		if err := c.buildOperatorImage(ctx, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// BinaryPaths says where Build puts each binary. The versions, and so the
// paths, come from the checkout's sources.
func (c *Config) BinaryPaths() (*Binaries, ClusterVersions, error) {
	if c.Root == "" {
		return nil, ClusterVersions{}, fmt.Errorf("%w: the local cluster is built from Muster's sources", ErrNoCheckout)
	}
	v, err := ReadClusterVersions(c.Root)
	if err != nil {
		return nil, v, err
	}
	bin := filepath.Join(c.Cache, "bin")
	b := &Binaries{
		ControlPlane: filepath.Join(bin, fmt.Sprintf("k8s-%s-etcd-%s", v.Kubernetes, v.Etcd)),
		CoreDNS:      filepath.Join(bin, "coredns-"+CoreDNSVersion, "coredns"),
		KWOK:         filepath.Join(bin, "kwok-"+KWOKVersion, "kwok"),
		Operator:     filepath.Join(bin, "operator", "linux-"+runtime.GOARCH, "muster-operator"),
		Registry:     filepath.Join(bin, "registry", "muster-registry"),
	}
	ev, err := ReadExtraVersions(c.Root)
	if err != nil {
		return nil, v, err
	}
	extraBinaryPaths(bin, ev, b)
	// The process node is optional until its main package exists.
	if mains, _ := filepath.Glob(filepath.Join(c.Root, "tools", "procnode", "*.go")); len(mains) > 0 {
		b.ProcNode = filepath.Join(bin, "procnode", "muster-procnode")
	}
	return b, v, nil
}

// binariesFile records in the state dir the binaries up started, so that
// status, env and down need not work them out from the sources, and work
// outside a checkout.
func (c *Config) binariesFile() string { return c.path("binaries.json") }

func (c *Config) recordBinaries(b *Binaries) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(c.binariesFile(), append(data, '\n'), 0o644)
}

// clusterBinaries are the binaries of the cluster in the state dir: those
// up recorded, else, in a checkout, those its sources build.
func (c *Config) clusterBinaries() (*Binaries, error) {
	data, err := os.ReadFile(c.binariesFile())
	switch {
	case err == nil:
		b := &Binaries{}
		if err := json.Unmarshal(data, b); err != nil {
			return nil, fmt.Errorf("reading %s: %w", c.binariesFile(), err)
		}
		return b, nil
	case !os.IsNotExist(err):
		return nil, err
	case c.Root == "":
		return nil, fmt.Errorf("no local cluster in %s (it has no %s): start one with `%s` from a Muster checkout",
			c.StateDir, filepath.Base(c.binariesFile()), c.command("up"))
	}
	b, _, err := c.BinaryPaths()
	return b, err
}

// buildOnce builds path unless it exists. It builds next to it and renames,
// because a binary that is running cannot be overwritten (text file busy).
func (c *Config) buildOnce(ctx context.Context, path, what string, build func(out string) error) error {
	if isExecutable(path) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	c.logf("building %s (only once, cached in %s) ...", what, filepath.Dir(path))
	start := time.Now()
	defer c.working("building "+what, progressEvery)()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := build(tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("building %s: %w", what, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	c.logf("built %s in %s", what, since(start))
	return nil
}

// buildFromSource builds a package of this repository into a staging file
// (which go build leaves alone when it is up to date) and installs it at
// path only if it changed.
func (c *Config) buildFromSource(ctx context.Context, dir, pkg, path string) error {
	start := time.Now()
	defer c.working("building "+filepath.Base(path), progressEvery)()
	stage := filepath.Join(filepath.Dir(path), ".stage", filepath.Base(path))
	if err := os.MkdirAll(filepath.Dir(stage), 0o755); err != nil {
		return err
	}
	if err := goCmd(ctx, dir, nil, "build", "-o", stage, pkg); err != nil {
		return fmt.Errorf("building %s: %w", filepath.Base(path), err)
	}
	same, err := sameFile(stage, path)
	if err != nil {
		return err
	}
	if same {
		c.logf("%-24s up to date (checked in %s)", filepath.Base(path), since(start))
		return nil
	}
	if err := copyExecutable(stage, path); err != nil {
		return err
	}
	c.logf("%-24s built in %s", filepath.Base(path), since(start))
	return nil
}

func goInstall(ctx context.Context, out, pkgAtVersion string) error {
	gobin, err := os.MkdirTemp(filepath.Dir(out), ".gobin-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(gobin) }()
	if err := goCmd(ctx, gobin, []string{"GOBIN=" + gobin}, "install", "-ldflags", "-s -w", pkgAtVersion); err != nil {
		return err
	}
	name := pkgAtVersion[strings.LastIndex(pkgAtVersion, "/")+1 : strings.LastIndex(pkgAtVersion, "@")]
	return os.Rename(filepath.Join(gobin, name), out)
}

func goCmd(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func sameFile(a, b string) (bool, error) {
	ha, err := fileHash(a)
	if err != nil {
		return false, err
	}
	hb, err := fileHash(b)
	if os.IsNotExist(err) {
		return false, nil
	}
	return err == nil && ha == hb, err
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// progressEvery is how often a build that is still running says so: a cold
// build runs for minutes and must not look hung. A variable for tests.
var progressEvery = 30 * time.Second

// working says every interval that what is still going on, and for how
// long, until the returned function is called.
func (c *Config) working(what string, every time.Duration) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				c.logf("  ... still %s (%s so far)", what, since(start))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
