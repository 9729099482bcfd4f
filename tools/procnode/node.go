package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"
	ndftypes "k8s.io/component-helpers/nodedeclaredfeatures/types"

	"github.com/muster-dev/muster/tools/procnode/internal/cgroup"
	"github.com/muster-dev/muster/tools/procnode/internal/image"
	"github.com/muster-dev/muster/tools/procnode/internal/ipam"
	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
	"github.com/muster-dev/muster/tools/procnode/internal/proc"
	"github.com/muster-dev/muster/tools/procnode/internal/provider"
	"github.com/muster-dev/muster/tools/procnode/internal/pvc"
)

// cleanup kills container processes and removes network namespaces left by
// an earlier (crashed) run. Mounts made for containers live in their own
// mount namespaces and vanish with the processes.
func cleanup(o *options) error {
	killed := provider.KillRecorded(o.stateDir)
	removed, err := netsetup.Cleanup(o.nodeName)
	if killed > 0 || len(removed) > 0 {
		log.Printf("cleanup: killed %d process groups, removed namespaces %v", killed, removed)
	}
	return err
}

// nodeCgroups finds the host's cgroups and removes the empty groups a
// crashed run left; nil when --cgroups=false or the host has none usable.
func nodeCgroups(o *options) *cgroup.Manager {
	if !o.cgroups {
		return nil
	}
	m := cgroup.Detect("/sys/fs/cgroup", "muster-procnode-"+o.nodeName)
	if m.Version() == cgroup.None {
		log.Printf("no usable cgroup v2 or v1 cpu and memory controllers: containers run without resource limits")
		return nil
	}
	m.Cleanup()
	log.Printf("containers run in cgroups (%s) limited by their resources", m.Version())
	return m
}

// imageStore opens the image cache under the state dir when there is a
// registry mirror; nil runs every container with the host's programs.
func imageStore(o *options) (*image.Store, error) {
	if o.registryMirror == "" {
		log.Printf("no --registry-mirror: containers run the host's programs")
		return nil, nil
	}
	s, err := image.NewStore(filepath.Join(o.stateDir, "images"), o.registryMirror)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	log.Printf("images are pulled from %s (plain HTTP); images it does not have run the host's programs", o.registryMirror)
	return s, nil
}

func run(o *options, level slog.Level) error {
	vklog.L = vkslog.FromSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	client, err := connect(o)
	if err != nil {
		return err
	}
	port, err := kubeletPort(o.listen)
	if err != nil {
		return err
	}
	if err := prepareStateDir(o); err != nil {
		return err
	}

	if err := proc.InitReaper(); err != nil {
		return fmt.Errorf("subreaper: %w", err)
	}
	if err := cleanup(o); err != nil {
		return err
	}
	alloc, err := ipam.New(o.podCIDR)
	if err != nil {
		return err
	}
	network, err := netsetup.NewNetwork(o.nodeName, alloc.Prefix(), alloc.Gateway())
	if err != nil {
		return err
	}
	defer func() {
		if err := network.Close(); err != nil {
			log.Printf("removing bridge namespace: %v", err)
		}
		_, _ = netsetup.Cleanup(o.nodeName)
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := pvc.Run(ctx, client, o.nodeName, o.stateDir); err != nil {
		return fmt.Errorf("provisioner: %w", err)
	}

	groups := nodeCgroups(o)
	images, err := imageStore(o)
	if err != nil {
		return err
	}
	prov := provider.New(provider.Config{
		NodeName: o.nodeName, StateDir: o.stateDir, Client: client,
		Network: network, IPAM: alloc, APIServer: o.apiServer, DNS: o.dns,
		Images: images, Forwards: o.forwards, Allocatable: o.capacity,
		RestartBackoff: o.restartBackoff,
		// Resolved by each child at exec time, so a rebuilt binary on disk
		// does not mix versions within one node process.
		ShimPath: "/proc/self/exe",
		Cgroups:  groups,
	})
	n, err := newNode(o, client, prov, port)
	if err != nil {
		return err
	}
	go func() {
		if err := n.Run(ctx); err != nil && ctx.Err() == nil {
			log.Printf("node controller stopped: %v", err)
			cancel()
		}
	}()
	if err := n.WaitReady(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("node not ready: %w", err)
	}
	log.Printf("node %s ready: kubelet API on %s, pods in %s, API server %s, DNS %q", o.nodeName, o.listen, o.podCIDR, o.apiServer, o.dns)
	go collectGarbagePeriodically(ctx, client, o, prov)
	if o.egressSocket != "" {
		stop, err := serveEgress(o.egressSocket, network)
		if err != nil {
			return err
		}
		defer stop()
	}

	waitForStop(ctx)
	cancel()
	<-n.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer scancel()
	prov.Shutdown(sctx)
	log.Printf("stopped")
	return nil
}

// connect builds the API client from the kubeconfig and, unless --apiserver
// was given, takes the API server address from it.
func connect(o *options) (*kubernetes.Clientset, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	if o.apiServer == "" {
		u, err := url.Parse(restCfg.Host)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("cannot derive --apiserver from %q", restCfg.Host)
		}
		o.apiServer = u.Host
		if u.Port() == "" {
			o.apiServer = net.JoinHostPort(u.Hostname(), "443")
		}
	}
	return client, nil
}

// kubeletPort checks the --listen address and returns its port, which the
// Node advertises as its kubelet endpoint.
func kubeletPort(listen string) (int, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return 0, fmt.Errorf("--listen: %w", err)
	}
	// The kubelet API does not authenticate callers (logs, exec): loopback only.
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return 0, fmt.Errorf("--listen %s: must be a loopback address such as 127.0.0.1:10250", listen)
	}
	port, _ := strconv.Atoi(portStr)
	return port, nil
}

// prepareStateDir creates the state directory and makes its path absolute.
func prepareStateDir(o *options) error {
	if err := os.MkdirAll(o.stateDir, 0o755); err != nil {
		return err
	}
	o.stateDir, _ = filepath.Abs(o.stateDir)
	return nil
}

// newNode creates the virtual-kubelet node that registers the Node object,
// hands pods to prov and serves the kubelet API on --listen.
func newNode(o *options, client kubernetes.Interface, prov *provider.Provider, port int) (*nodeutil.Node, error) {
	cert, err := selfSignedCert(o.nodeName)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	// NewNode builds a throwaway client from $KUBECONFIG before our options
	// replace it; point it at the same file so it does not warn.
	_ = os.Setenv("KUBECONFIG", o.kubeconfig)
	return nodeutil.NewNode(o.nodeName,
		func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
			describeNode(pc.Node, o, port)
			return prov, nil, nil
		},
		nodeutil.WithClient(client),
		nodeutil.AttachProviderRoutes(mux),
		nodeutil.WithTLSConfig(func(c *tls.Config) error {
			c.Certificates = []tls.Certificate{cert}
			return nil
		}),
		func(c *nodeutil.NodeConfig) error {
			// The node resolves env and downward-API fields itself (VK's own
			// resolver cannot do status.podIP/hostIP).
			c.SkipDownwardAPIResolution = true
			c.HTTPListenAddr = o.listen
			c.NumWorkers = 4
			// Only the API server (and local users) can reach 127.0.0.1.
			c.Handler = api.InstrumentHandler(nodeutil.WithAuth(nodeutil.NoAuth(), mux))
			return nil
		},
	)
}

// waitForStop returns on SIGTERM or SIGINT, or when ctx ends (the node
// controller failed).
func waitForStop(ctx context.Context) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Printf("%v: stopping pods", s)
	case <-ctx.Done():
		log.Printf("stopping pods")
	}
}

// collectGarbagePeriodically runs collectGarbage every minute until ctx ends.
func collectGarbagePeriodically(ctx context.Context, client kubernetes.Interface, o *options, prov *provider.Provider) {
	// Let VK hand over the pods it knows about first.
	for t := time.NewTimer(15 * time.Second); ; t.Reset(time.Minute) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		collectGarbage(ctx, client, o, prov)
	}
}

// describeNode fills the Node object VK registers.
func describeNode(nd *corev1.Node, o *options, port int) {
	nd.Labels["muster.dev/process-node"] = "true"
	nd.Labels["kubernetes.io/os"] = "linux"
	nd.Labels["kubernetes.io/arch"] = runtime.GOARCH
	nd.Status.Capacity = o.capacity.DeepCopy()
	nd.Status.Allocatable = o.capacity.DeepCopy()
	// Only an InternalIP: a Hostname address would make the API server try
	// to resolve the node name to reach the kubelet API.
	nd.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: provider.HostIP}}
	nd.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}}
	nd.Status.NodeInfo = corev1.NodeSystemInfo{
		OperatingSystem: "linux", Architecture: runtime.GOARCH,
		KubeletVersion: kubeletVersion, ContainerRuntimeVersion: "procnode://1",
	}
	nd.Status.DeclaredFeatures = declaredFeatures()
	now := metav1.Now()
	var conds []corev1.NodeCondition
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		conds = append(conds, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: "ProcessNode", LastHeartbeatTime: now, LastTransitionTime: now})
	}
	// VK's ready callback turns this one True.
	conds = append(conds, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "Starting", LastHeartbeatTime: now, LastTransitionTime: now})
	nd.Status.Conditions = conds
}

// kubeletVersion is the kubelet whose behaviour the node follows.
const kubeletVersion = "v1.36.3"

// nodeFeatureGates are the kubelet feature gates behind node features
// (k8s.io/component-helpers/nodedeclaredfeatures) whose behaviour the node
// has. A kubelet 1.36.3 with its default gates also declares
// InPlacePodLevelResourcesVerticalScaling and
// InPlacePodVerticalScalingInitContainers, but the node resizes nothing in
// place, and ExtendWebSocketsToKubelet, which would make the API server
// hand kubectl's WebSocket exec, attach and port-forward streams to the
// node's kubelet API, which serves SPDY (and WebSocket exec only up to v4).
var nodeFeatureGates = ndftypes.FeatureGateMap{
	restartallcontainers.RestartAllContainersOnContainerExits: true,
}

// declaredFeatures is the Node's status.declaredFeatures, found as the
// kubelet finds its own: the scheduler places a pod that needs one of them
// (a pod with a RestartAllContainers rule) only on a node that declares it.
func declaredFeatures() []string {
	return nodedeclaredfeatures.DefaultFramework.DiscoverNodeFeatures(&nodedeclaredfeatures.NodeConfiguration{
		FeatureGates: nodeFeatureGates,
		Version:      version.MustParse(kubeletVersion),
	})
}

// collectGarbage removes the directories of pods that exist neither in the
// API nor in the provider (deleted while the node was down, or finished pods
// deleted later).
func collectGarbage(ctx context.Context, client kubernetes.Interface, o *options, prov *provider.Provider) {
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", o.nodeName).String(),
	})
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, p := range pods.Items {
		live[string(p.UID)] = true
	}
	// Asked after the list, so a pod created meanwhile is known here.
	for _, uid := range prov.KnownUIDs() {
		live[uid] = true
	}
	dir := filepath.Join(o.stateDir, "pods")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		i := strings.LastIndexByte(e.Name(), '_')
		if i < 0 || live[e.Name()[i+1:]] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err == nil {
			log.Printf("removed files of deleted pod %s", e.Name())
		}
	}
}
