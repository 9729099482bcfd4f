// Package devcluster builds and runs the local Kubernetes cluster behind
// `muster dev`: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler built from the module proxy, CoreDNS for cluster DNS, a
// process node that runs pods as host processes, optional KWOK fake nodes,
// and the Muster operator installed on top.
package devcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
}

// DefaultPorts are the ports `muster dev up` uses.
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
	// the process node maps it to the locally built binary.
	OperatorImage = "ghcr.io/muster-dev/muster-operator:latest"
	// operatorNamespace and operatorDeployment name what config/default installs.
	operatorNamespace  = "muster-system"
	operatorDeployment = "muster-operator"
)

// Config says where the cluster's sources, binaries and state live and what
// to start.
type Config struct {
	// Root is the Muster repository: the cluster is built from its tools/
	// modules and the operator from its cmd/.
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
	// Out receives one progress line per step.
	Out io.Writer
}

// NewConfig returns the default configuration for the repository that
// contains the working directory.
func NewConfig() (*Config, error) {
	root, err := FindRoot()
	if err != nil {
		return nil, err
	}
	cache := os.Getenv("MUSTER_CACHE")
	if cache == "" {
		cache = filepath.Join(root, ".cache")
	}
	cache, err = filepath.Abs(cache)
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

const rootModule = "module github.com/muster-dev/muster\n"

// FindRoot walks up from the working directory to the Muster repository,
// whose sources the cluster is built from.
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), rootModule) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the Muster repository: `muster dev` builds the cluster from its sources, run it from the repository")
		}
		dir = parent
	}
}

func (c *Config) logf(format string, args ...any) {
	if c.Out != nil {
		fmt.Fprintf(c.Out, format+"\n", args...)
	}
}

// Kubeconfig is the admin kubeconfig of the running cluster.
func (c *Config) Kubeconfig() string { return filepath.Join(c.StateDir, "kubeconfig") }

func (c *Config) path(parts ...string) string {
	return filepath.Join(append([]string{c.StateDir}, parts...)...)
}
func (c *Config) pki(name string) string { return c.path("pki", name) }
func (c *Config) logFile(name string) string {
	return c.path("logs", name+".log")
}
