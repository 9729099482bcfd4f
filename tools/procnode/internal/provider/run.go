package provider

import (
	"context"
	"fmt"
	"log"
	"maps"
	"os"
	"runtime/debug"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
	"github.com/muster-dev/muster/tools/procnode/internal/volume"
)

// stopMode says why a pod is stopped.
type stopMode int

const (
	stopDelete   stopMode = iota + 1 // deleted in the API: clean up and remove the object
	stopShutdown                     // node shutdown: stop processes, keep files
)

// podRun is one pod on this node, from CreatePod until cleanup.
type podRun struct {
	p         *Provider
	namespace string
	name      string
	dir       string

	policy corev1.RestartPolicy // the pod's restartPolicy (immutable)

	mu        sync.Mutex
	pod       *corev1.Pod // spec and metadata as last seen
	startTime *metav1.Time
	podIP     string
	sandbox   sandboxState
	initDone  bool
	// reinit is set while the init containers of an initialized pod run
	// again after a restart of all containers.
	reinit  bool
	phase   corev1.PodPhase
	reason  string
	message string
	inits   []*ctr
	mains   []*ctr
	round   *round // the current start of the containers
	// frozen is the status reported while a restart of all containers
	// removes them.
	frozen *corev1.PodStatus

	net    *netsetup.PodNet
	fwd    *netsetup.Forwarder
	hports *hostPorts
	vols   map[string]volume.Volume
	tokens *tokenCache

	// stopCh is closed when the pod is deleted or the node shuts down.
	stopOnce sync.Once
	stopCh   chan struct{}
	stopMode stopMode
	// halt stops all containers: on stop, or when the pod fails as a whole
	// (activeDeadlineSeconds). Each round's stoppers are its children.
	halt     *stopper
	workers  sync.WaitGroup // container supervisors
	failOnce sync.Once
	done     chan struct{}

	dirty   chan struct{} // wakes the status notifier
	refresh chan struct{} // asks refreshVolumes to render API-backed volumes now
}

type sandboxState struct {
	ready   bool
	message string
}

func newPodRun(p *Provider, pod *corev1.Pod) *podRun {
	r := &podRun{
		p:         p,
		namespace: pod.Namespace,
		name:      pod.Name,
		dir:       podDir(p.cfg.StateDir, pod),
		policy:    pod.Spec.RestartPolicy,
		pod:       pod,
		phase:     corev1.PodPending,
		stopCh:    make(chan struct{}),
		halt:      newStopper(),
		done:      make(chan struct{}),
		dirty:     make(chan struct{}, 1),
		refresh:   make(chan struct{}, 1),
	}
	now := metav1.Now()
	r.startTime = &now
	if pod.Status.StartTime != nil {
		r.startTime = pod.Status.StartTime
	}
	prev := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		prev[s.Name] = s
	}
	for _, c := range pod.Spec.InitContainers {
		r.inits = append(r.inits, newCtr(c, true, prev))
	}
	for _, c := range pod.Spec.Containers {
		r.mains = append(r.mains, newCtr(c, false, prev))
	}
	return r
}

// all returns the init containers, then the app containers. Called with
// r.mu held or for the immutable slices only.
func (r *podRun) all() []*ctr {
	return append(append([]*ctr(nil), r.inits...), r.mains...)
}

func (r *podRun) uid() types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod.UID
}

func (r *podRun) logf(format string, a ...any) {
	log.Printf("pod %s/%s: %s", r.namespace, r.name, fmt.Sprintf(format, a...))
}

// changed schedules a status notification; the notifier always sends the
// newest state, so slow API calls never reorder updates. Called without
// r.mu held.
func (r *podRun) changed() {
	if r.p.observe != nil {
		r.p.observeMu.Lock()
		r.p.observe(r.snapshot())
		r.p.observeMu.Unlock()
	}
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

func (r *podRun) notifier(stop <-chan struct{}) {
	for {
		select {
		case <-r.dirty:
			// A deleted pod's name may already belong to a new pod.
			if r.p.current(r) {
				r.p.notify(r.snapshot())
			}
		case <-stop:
			return
		}
	}
}

// update takes the pod's new metadata and activeDeadlineSeconds. Containers
// that start from now on see the new labels and annotations in their
// environment, and downward-API files show them at once, as the kubelet
// rewrites the pod's volumes on an update.
func (r *podRun) update(pod *corev1.Pod) {
	r.mu.Lock()
	relabelled := !maps.Equal(r.pod.Labels, pod.Labels) || !maps.Equal(r.pod.Annotations, pod.Annotations)
	r.pod.Labels = pod.Labels
	r.pod.Annotations = pod.Annotations
	r.pod.Spec.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	r.mu.Unlock()
	if relabelled {
		select {
		case r.refresh <- struct{}{}:
		default:
		}
	}
	r.changed()
}

func (r *podRun) terminationGrace() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if r.pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *r.pod.Spec.TerminationGracePeriodSeconds
	}
	return time.Duration(max(g, 2)) * time.Second
}

// stop asks the pod to terminate; the first call decides the mode.
func (r *podRun) stop(grace time.Duration, mode stopMode) {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		r.stopMode = mode
		r.mu.Unlock()
		close(r.stopCh)
	})
	r.halt.close(time.Now().Add(grace))
}

func (r *podRun) stopping() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

// run is the pod's life: sandbox, init containers, app containers, then
// waiting for deletion, then cleanup.
func (r *podRun) run() {
	notifyStop := make(chan struct{})
	go r.notifier(notifyStop)
	defer func() {
		close(notifyStop)
		close(r.done)
		r.p.forget(r)
	}()
	defer r.guard()
	r.changed()
	go func() {
		defer r.guard()
		r.watchDeadline()
	}()

	if r.setupSandboxWithRetry() {
		r.runRounds()
	}
	if !r.stopping() {
		// The pod finished by itself (or failed as a whole): stop sidecars,
		// free its network, keep its files (logs, emptyDirs) until deletion.
		r.mu.Lock()
		rd := r.round
		r.mu.Unlock()
		if rd != nil {
			rd.sidecars.close(time.Now().Add(r.terminationGrace()))
		}
		r.workers.Wait()
		r.releaseNetwork()
		r.changed()
		<-r.stopCh
	}
	r.halt.close(time.Now().Add(r.terminationGrace()))
	r.workers.Wait()
	r.releaseNetwork()

	r.mu.Lock()
	mode := r.stopMode
	r.finalizeStatuses()
	r.mu.Unlock()
	if mode == stopShutdown {
		return
	}
	if err := os.RemoveAll(r.dir); err != nil {
		r.logf("removing %s: %v", r.dir, err)
	}
	if r.p.cfg.Cgroups != nil {
		r.p.cfg.Cgroups.RemoveEmpty(string(r.uid()))
	}
	r.deleteFromAPI()
}

// deleteFromAPI removes the pod object once its processes are gone, as the
// kubelet does after a graceful deletion.
func (r *podRun) deleteFromAPI() {
	uid := r.uid()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	err := r.p.cfg.Client.CoreV1().Pods(r.namespace).Delete(ctx, r.name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.logf("deleting pod object: %v", err)
	}
}

// watchDeadline enforces activeDeadlineSeconds.
func (r *podRun) watchDeadline() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.halt.done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		ads := r.pod.Spec.ActiveDeadlineSeconds
		terminal := r.phase == corev1.PodSucceeded || r.phase == corev1.PodFailed
		start := r.startTime.Time
		r.mu.Unlock()
		if terminal {
			return
		}
		if ads != nil && time.Since(start) > time.Duration(*ads)*time.Second {
			r.failPod("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
			return
		}
	}
}

// guard keeps a bug in one pod's goroutines from taking the node (and every
// other pod) down: the pod fails instead. Use as "defer r.guard()".
func (r *podRun) guard() {
	if v := recover(); v != nil {
		r.logf("internal error: %v\n%s", v, debug.Stack())
		r.failPod("ProcessNodeError", fmt.Sprintf("internal error of the process node: %v", v))
	}
}

// failPod marks the pod Failed and stops its containers with the pod's
// grace period; the pod object stays until it is deleted.
func (r *podRun) failPod(reason, message string) {
	r.failOnce.Do(func() {
		r.mu.Lock()
		r.phase = corev1.PodFailed
		r.reason = reason
		r.message = message
		r.mu.Unlock()
		r.halt.close(time.Now().Add(r.terminationGrace()))
		r.changed()
	})
}

// stopper is a one-shot stop signal with a SIGKILL deadline; a later close
// may only bring the deadline forward. Closing it closes its children with
// the same deadline.
type stopper struct {
	once     sync.Once
	ch       chan struct{}
	mu       sync.Mutex
	deadline time.Time
	fired    bool
	children []*stopper
}

func newStopper() *stopper { return &stopper{ch: make(chan struct{})} }

// child returns a stopper that fires when s does, and may fire alone.
func (s *stopper) child() *stopper {
	c := newStopper()
	s.mu.Lock()
	if !s.fired {
		s.children = append(s.children, c)
		s.mu.Unlock()
		return c
	}
	deadline := s.deadline
	s.mu.Unlock()
	c.close(deadline)
	return c
}

func (s *stopper) close(deadline time.Time) {
	s.mu.Lock()
	if !s.fired || deadline.Before(s.deadline) {
		s.deadline = deadline
	}
	s.fired = true
	deadline, children := s.deadline, s.children
	s.mu.Unlock()
	s.once.Do(func() { close(s.ch) })
	for _, c := range children {
		c.close(deadline)
	}
}

func (s *stopper) done() <-chan struct{} { return s.ch }

func (s *stopper) closed() bool {
	select {
	case <-s.ch:
		return true
	default:
		return false
	}
}

func (s *stopper) killAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}
