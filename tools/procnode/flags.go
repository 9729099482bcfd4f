package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
)

type options struct {
	kubeconfig     string
	nodeName       string
	stateDir       string
	podCIDR        string
	apiServer      string
	dns            string
	registryMirror string
	egressSocket   string
	listen         string
	cleanup        bool
	forwards       []netsetup.Rule
	capacity       corev1.ResourceList
	restartBackoff time.Duration
	logLevel       string
	cgroups        bool
}

// repeated collects a repeatable flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("muster-procnode", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig")
	fs.StringVar(&o.nodeName, "node-name", "muster-process-node", "name of the Node to register")
	fs.StringVar(&o.stateDir, "state-dir", "/var/lib/muster-procnode", "directory for pod files, logs, volumes and claim folders")
	fs.StringVar(&o.podCIDR, "pod-cidr", "10.244.0.0/24", "pod addresses (used only inside the node's network namespaces)")
	fs.StringVar(&o.apiServer, "apiserver", "", "API server HOST:PORT on host loopback, forwarded into pods at 127.0.0.1:443 (default: from the kubeconfig)")
	fs.StringVar(&o.dns, "dns", "", "cluster DNS HOST:PORT on host loopback, forwarded into pods at 127.0.0.1:53 (UDP and TCP)")
	var forwards, capacity repeated
	fs.StringVar(&o.registryMirror, "registry-mirror", "", "HOST:PORT of a local registry (plain HTTP): an image found there under its repository path runs from its own root filesystem; others run the host's programs")
	fs.StringVar(&o.egressSocket, "egress-socket", "", "unix socket of an HTTP CONNECT proxy into the pod network, for the API server's egress selector (webhooks behind Services, the kubelet API); off when empty")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:10250", "kubelet API address (TLS, self-signed)")
	fs.BoolVar(&o.cleanup, "cleanup", false, "remove namespaces and processes left by an earlier run of this node, then exit")
	fs.Var(&forwards, "forward", "PORT=HOST:PORT: also forward 127.0.0.1:PORT (TCP) in every pod to a host address (repeatable)")
	fs.Var(&capacity, "capacity", "NAME=QUANTITY: node capacity, e.g. nvidia.com/gpu=8 (repeatable; defaults: the host's CPUs, memory and disk, pods=250)")
	fs.DurationVar(&o.restartBackoff, "restart-backoff", 10*time.Second, "first crash-loop back-off (doubles up to 5m)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&o.cgroups, "cgroups", true, "put each container in a cgroup limited by its resources (cgroup v2, else v1's cpu and memory)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.registryMirror != "" {
		host, port, err := net.SplitHostPort(o.registryMirror)
		if _, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || host == "" || strings.Contains(host, "/") {
			return nil, fmt.Errorf("--registry-mirror %q: want HOST:PORT", o.registryMirror)
		}
	}
	for _, f := range forwards {
		port, target, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--forward %q: want PORT=HOST:PORT", f)
		}
		o.forwards = append(o.forwards, netsetup.Rule{Proto: "tcp", Listen: "127.0.0.1:" + port, Target: target})
	}
	o.capacity = hostCapacity()
	for _, c := range capacity {
		name, qty, ok := strings.Cut(c, "=")
		q, err := resource.ParseQuantity(qty)
		if !ok || err != nil {
			return nil, fmt.Errorf("--capacity %q: want NAME=QUANTITY", c)
		}
		o.capacity[corev1.ResourceName(name)] = q
	}
	return o, nil
}

// hostCapacity is what the node advertises unless told otherwise: the
// host's own CPUs, memory and disk, so that the scheduler's picture of the
// node is true (pods run as the host's processes).
func hostCapacity() corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           resource.MustParse("4Gi"),
		corev1.ResourcePods:             resource.MustParse("250"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		out[corev1.ResourceMemory] = *resource.NewQuantity(int64(si.Totalram)*int64(si.Unit), resource.BinarySI)
	}
	var fs unix.Statfs_t
	if unix.Statfs("/", &fs) == nil {
		out[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
	}
	return out
}
