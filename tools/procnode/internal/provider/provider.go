// Package provider is the virtual-kubelet provider of the process node: it
// runs each pod's containers as host processes inside per-pod network
// namespaces and per-container mount namespaces.
package provider

import (
	"context"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/tools/procnode/internal/cgroup"
	"github.com/muster-dev/muster/tools/procnode/internal/image"
	"github.com/muster-dev/muster/tools/procnode/internal/ipam"
	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
)

// Config configures the provider.
type Config struct {
	NodeName string
	StateDir string
	Client   kubernetes.Interface
	Network  *netsetup.Network
	IPAM     *ipam.Allocator
	// APIServer and DNS are host addresses (host:port) forwarded into every
	// pod namespace at 127.0.0.1:443 and 127.0.0.1:53. DNS may be empty.
	APIServer string
	DNS       string
	// Images pulls containers' images from the local registry mirror; nil
	// runs every container with the host's programs.
	Images      *image.Store
	Forwards    []netsetup.Rule
	Allocatable corev1.ResourceList
	// RestartBackoff is the first crash-loop delay; it doubles up to 5 min.
	RestartBackoff time.Duration
	// ShimPath is the executable started as the container shim.
	ShimPath string
	// Cgroups makes each container attempt's cgroup; nil runs containers
	// without limits.
	Cgroups *cgroup.Manager
}

// HostIP is the node's address as pods and the API server see it.
const HostIP = "127.0.0.1"

// APIPortInPod is where the API server forwarder listens inside a pod.
const APIPortInPod = "443"

// Provider implements nodeutil.Provider and node.PodNotifier.
type Provider struct {
	cfg Config

	mu       sync.Mutex
	pods     map[string]*podRun // by namespace/name: the pod the API knows
	all      map[*podRun]struct{}
	notifyFn func(*corev1.Pod)
	// start runs a pod's life in the background; tests of the provider's
	// bookkeeping replace it.
	start func(*podRun)
	// observe, set by tests of status sequences, sees the pod's status
	// after every change, in order (notifications coalesce).
	observe   func(*corev1.Pod)
	observeMu sync.Mutex
}

// New returns a provider; call Shutdown to stop its pods.
func New(cfg Config) *Provider {
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = 10 * time.Second
	}
	return &Provider{cfg: cfg, pods: map[string]*podRun{}, all: map[*podRun]struct{}{}, start: func(r *podRun) { go r.run() }}
}

func key(ns, name string) string { return ns + "/" + name }

// NotifyPods registers VK's callback for asynchronous status changes.
func (p *Provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.mu.Lock()
	p.notifyFn = cb
	p.mu.Unlock()
}

func (p *Provider) notify(pod *corev1.Pod) {
	p.mu.Lock()
	cb := p.notifyFn
	p.mu.Unlock()
	if cb != nil {
		cb(pod)
	}
}

// CreatePod starts the pod in the background and reports Pending at once,
// so the API shows ContainerCreating instead of nothing.
//
// A run of an earlier pod of the same name is stopped first: the API
// server holds a new pod under a name only once the old one is gone from
// it, and the old one's deletion may reach this node after the new pod
// does (a controller that replaces a pod under its name, as soon as the
// old one is gone).
func (p *Provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	k := key(pod.Namespace, pod.Name)
	old := p.pods[k]
	if old != nil && old.uid() == pod.UID {
		p.mu.Unlock()
		return nil
	}
	r := newPodRun(p, pod.DeepCopy())
	p.pods[k] = r
	p.all[r] = struct{}{}
	p.mu.Unlock()
	if old != nil {
		old.logf("superseded by pod %s of the same name: stopping", pod.UID)
		old.stop(supersededGrace, stopDelete)
	}
	p.start(r)
	return nil
}

// supersededGrace is how long the processes of a pod already gone from the
// API get to stop after SIGTERM, as for a pod deleted while the node was
// not watching.
const supersededGrace = 2 * time.Second

// UpdatePod takes the new metadata (labels, annotations feed the downward
// API) and activeDeadlineSeconds; running processes are not restarted. A
// pod that differs from the one running under its name only by its UID is
// a new pod (virtual-kubelet finds the old run by name and takes the new
// pod for an update of it): it is created.
func (p *Provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	r := p.lookup(pod.Namespace, pod.Name)
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s is not running on this node", pod.Namespace, pod.Name)
	}
	if r.uid() != pod.UID {
		return p.CreatePod(ctx, pod)
	}
	r.update(pod)
	return nil
}

// DeletePod stops the pod's containers (SIGTERM, SIGKILL after the grace
// period) in the background; once they are gone the node cleans up and
// removes the pod object, like the kubelet does.
//
// A pod that no longer runs here (it ended and the node already removed it,
// racing the delete) is done: virtual-kubelet treats nil and NotFound alike
// but records a Warning event for NotFound, which would be noise on every
// pod that finishes as it is deleted.
func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	r := p.lookup(pod.Namespace, pod.Name)
	if r == nil || (pod.UID != "" && r.uid() != pod.UID) {
		return nil
	}
	grace := int64(supersededGrace / time.Second) // the pod is already gone from the API: be quick
	if pod.DeletionGracePeriodSeconds != nil {
		grace = *pod.DeletionGracePeriodSeconds
	}
	r.stop(time.Duration(max(grace, 2))*time.Second, stopDelete)
	// From now on the name belongs to whatever pod the API creates next
	// under it (a controller may re-create it as soon as this one is gone).
	p.detach(r)
	return nil
}

// detach stops answering for the run by name; it stays in p.all until its
// cleanup finishes.
func (p *Provider) detach(r *podRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := key(r.namespace, r.name); p.pods[k] == r {
		delete(p.pods, k)
	}
}

// current reports whether the run still answers for its pod name.
func (p *Provider) current(r *podRun) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[key(r.namespace, r.name)] == r
}

func (p *Provider) lookup(ns, name string) *podRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[key(ns, name)]
}

// forget drops a finished pod run.
func (p *Provider) forget(r *podRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key(r.namespace, r.name)
	if p.pods[k] == r {
		delete(p.pods, k)
	}
	delete(p.all, r)
}

// GetPod returns the pod with the status the node computed.
func (p *Provider) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	r := p.lookup(ns, name)
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s not found", ns, name)
	}
	return r.snapshot(), nil
}

// GetPodStatus returns the pod's status.
func (p *Provider) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods lists the pods this node runs.
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.snapshot())
	}
	return out, nil
}

// KnownUIDs lists the UIDs of every pod the provider holds, including pods
// still being torn down.
func (p *Provider) KnownUIDs() []string {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.all))
	for r := range p.all {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		out = append(out, string(r.uid()))
	}
	return out
}

// Shutdown stops every pod (SIGTERM, then SIGKILL after its grace period)
// and frees their network namespaces, but keeps their directories: the pods
// still exist in the API and will be started again by the next run.
func (p *Provider) Shutdown(ctx context.Context) {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.all))
	for r := range p.all {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		r.stop(r.terminationGrace(), stopShutdown)
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return
		}
	}
}
