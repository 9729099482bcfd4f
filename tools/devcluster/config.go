// Package devcluster builds and runs the local Kubernetes cluster behind
// muster-dev (tools/musterdev), the e2e tests and the bench: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler built from the
// module proxy, CoreDNS for cluster DNS, a process node that runs pods as
// host processes, optional KWOK fake nodes, optional gang schedulers
// (scheduler-plugins' coscheduling, Volcano) and Kueue, and the Muster
// operator installed on top.
package devcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Ports are the fixed 127.0.0.1 ports of the local cluster. They sit in the
// 16xxx range, away from the components' well-known defaults (2379, 6443,
// 10250, 10257, 10259, 53), so a dev cluster does not clash with a real one.
type Ports struct {
	EtcdClient, EtcdPeer int
	APIServer            int
	ControllerManager    int
	Scheduler            int
	DNS, DNSReady        int
	KWOK                 int
	ProcNode             int
	// Registry is the local OCI registry the process node pulls from.
	Registry int
	// The optional components (see extras.go): each gang scheduler's
	// health port and the port of its metrics listener, Kueue's health and
	// webhook ports.
	Coscheduling, CoschedulingController          int
	VolcanoScheduler, VolcanoSchedulerMetrics     int
	VolcanoControllers, VolcanoControllersMetrics int
	KueueHealth, KueueWebhook                     int
}

// DefaultPorts are the ports `muster-dev up` uses.
var DefaultPorts = Ports{
	EtcdClient:        16379,
	EtcdPeer:          16380,
	APIServer:         16443,
	ControllerManager: 16257,
	Scheduler:         16259,
	DNS:               16053,
	DNSReady:          16181,
	KWOK:              16247,
	ProcNode:          16250,
	Registry:          16500,

	Coscheduling:              16260,
	CoschedulingController:    16267,
	VolcanoScheduler:          16261,
	VolcanoSchedulerMetrics:   16262,
	VolcanoControllers:        16263,
	VolcanoControllersMetrics: 16264,
	KueueHealth:               16265,
	KueueWebhook:              16266,
}

const (
	// ServiceCIDR is the cluster-IP range; 10.96.0.1 is the kubernetes Service.
	ServiceCIDR = "10.96.0.0/16"
	// PodCIDR is the process node's pod network (a bridge on the host).
	PodCIDR = "10.244.0.0/24"
	// KWOKPodCIDR is where KWOK invents pod IPs for fake nodes; it does not
	// overlap PodCIDR so a fake IP never shadows a real pod.
	KWOKPodCIDR = "10.245.0.0/16"
	// ClusterDomain is the DNS domain of Services and pods.
	ClusterDomain = "cluster.local"
	// ProcNodeName is the name of the process node.
	ProcNodeName = "muster-procnode"
	// OperatorImage is the image of the operator Deployment in config/manager;
	// muster-dev installs its own build of it from the local registry instead.
	OperatorImage = "ghcr.io/muster-dev/muster-operator:v0.1.0"
	// OperatorNamespace is where config/dev installs the operator.
	OperatorNamespace = "muster-system"
	// operatorDeployment is the operator's Deployment there.
	operatorDeployment = "muster-operator"
)

// Config says where the cluster's sources, binaries and state live and what
// to start.
type Config struct {
	// Root is the Muster checkout: the cluster is built from its tools/
	// modules and the operator from its cmd/. It is empty in a
	// configuration from NewStateConfig outside a checkout, which can show
	// and stop a cluster but not build or start one.
	Root string
	// Cache holds built binaries, keyed by version (MUSTER_CACHE, default
	// <Root>/.cache).
	Cache string
	// StateDir holds certificates, kubeconfigs, data, logs and pidfiles of a
	// running cluster; `down` removes it.
	StateDir string
	Ports    Ports
	// FakeNodes KWOK nodes with GPUsPerNode nvidia.com/gpu each; 0 starts no KWOK.
	FakeNodes, GPUsPerNode int
	// NoOperator skips building and installing Muster.
	NoOperator bool
	// Schedulers are the gang schedulers to run beside kube-scheduler
	// (Coscheduling, Volcano; see ParseSchedulers).
	Schedulers []string
	// Kueue runs Kueue's controller manager with its CRDs and webhooks.
	Kueue bool
	// Profiling serves the API server's /debug/pprof to its admins, and the
	// operator's on its pod's loopback address (config/profiling): the
	// benchmark records their profiles. Off otherwise.
	Profiling bool
	// OperatorArgs are flags added to the operator's own (the benchmark's
	// -operator-args, to measure one against the defaults).
	OperatorArgs []string
	// ControllerManagerQPS and ControllerManagerBurst are
	// kube-controller-manager's client rate limits; 0 keeps the local
	// cluster's (200 and 400). The benchmark runs the built-in Job
	// controller at the operator's rates, and once at upstream's.
	ControllerManagerQPS, ControllerManagerBurst int
	// Out receives one progress line per step.
	Out io.Writer
	// Command is how the user runs muster-dev (`go run ./tools/musterdev`,
	// a binary's path), so that the commands messages suggest work as
	// printed. Empty means muster-dev.
	Command string
}

// ErrNoCheckout says the working directory is not inside a Muster checkout,
// which building and starting the cluster need.
var ErrNoCheckout = errors.New("not inside a Muster checkout")

// NewConfig returns the default configuration for the checkout that
// contains the working directory: what building and starting the cluster
// need.
func NewConfig() (*Config, error) {
	root, err := FindRoot()
	if err != nil {
		return nil, err
	}
	cache, err := defaultCache(root)
	if err != nil {
		return nil, err
	}
	return &Config{
		Root:     root,
		Cache:    cache,
		StateDir: filepath.Join(cache, "dev"),
		Ports:    DefaultPorts,
		Out:      os.Stdout,
	}, nil
}

// NewStateConfig returns the configuration of a cluster started before, for
// what needs only its state (status, env, down): the pidfiles, the
// kubeconfig and the binaries up recorded, not the sources. So it works
// outside a checkout. stateDir overrides the default, <cache>/dev; the cache
// is $MUSTER_CACHE, else the .cache of the checkout around the working
// directory, else that of the checkout this program was built from.
func NewStateConfig(stateDir string) (*Config, error) {
	root, err := FindRoot()
	if errors.Is(err, ErrNoCheckout) {
		root = ""
	} else if err != nil {
		return nil, err
	}
	c := &Config{Root: root, Ports: DefaultPorts, Out: os.Stdout}
	cacheRoot := root
	if cacheRoot == "" {
		cacheRoot = BuiltFrom()
	}
	c.Cache, err = defaultCache(cacheRoot)
	switch {
	case stateDir != "":
		// A cache that cannot be found does not matter then: it only
		// locates the default state dir, and a checkout's binaries (a
		// checkout always has one).
		c.StateDir, err = filepath.Abs(stateDir)
		return c, err
	case err != nil:
		return nil, err
	}
	c.StateDir = filepath.Join(c.Cache, "dev")
	return c, nil
}

// defaultCache is $MUSTER_CACHE, else <root>/.cache.
func defaultCache(root string) (string, error) {
	cache := os.Getenv("MUSTER_CACHE")
	if cache == "" {
		if root == "" {
			return "", fmt.Errorf("%w and MUSTER_CACHE is not set, so where the local cluster lives is unknown: "+
				"set MUSTER_CACHE as it was for up (default <checkout>/.cache), pass --state-dir, or run from the checkout", ErrNoCheckout)
		}
		cache = filepath.Join(root, ".cache")
	}
	return filepath.Abs(cache)
}

const rootModule = "module github.com/muster-dev/muster\n"

// FindRoot walks up from the working directory to the Muster checkout,
// whose sources the cluster is built from.
func FindRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isRoot(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("%w: neither %s nor a folder above it holds the go.mod of github.com/muster-dev/muster", ErrNoCheckout, wd)
		}
	}
}

func isRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && strings.HasPrefix(string(data), rootModule)
}

// BuiltFrom is the checkout this program was compiled from, or "" when that
// is unknown or gone. The compiler records each source file's absolute path
// (unless -trimpath), so a muster-dev built or installed from a checkout
// still finds that checkout's cluster when run elsewhere. The module cache
// (module@version folders) holds sources, never a checkout's cluster.
func BuiltFrom() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	// file is <root>/tools/devcluster/config.go.
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	if strings.Contains(filepath.Base(root), "@") || !isRoot(root) {
		return ""
	}
	return root
}

// command is the muster-dev command line with the given arguments.
func (c *Config) command(args string) string {
	cmd := c.Command
	if cmd == "" {
		cmd = "muster-dev"
	}
	return cmd + " " + args
}

func (c *Config) logf(format string, args ...any) {
	if c.Out != nil {
		// A long build reports progress from another goroutine.
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(c.Out, format+"\n", args...)
	}
}

var logMu sync.Mutex

// Kubeconfig is the admin kubeconfig of the running cluster.
func (c *Config) Kubeconfig() string { return filepath.Join(c.StateDir, "kubeconfig") }

func (c *Config) path(parts ...string) string {
	return filepath.Join(append([]string{c.StateDir}, parts...)...)
}
func (c *Config) pki(name string) string { return c.path("pki", name) }
func (c *Config) logFile(name string) string {
	return c.path("logs", name+".log")
}
