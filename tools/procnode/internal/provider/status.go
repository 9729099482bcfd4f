package provider

import (
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podDir is the pod's private directory under the state dir.
func podDir(stateDir string, pod *corev1.Pod) string {
	return filepath.Join(stateDir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// managedConditions are the pod conditions the node owns; others (such as
// PodScheduled) are kept as the API has them.
var managedConditions = map[corev1.PodConditionType]bool{
	corev1.PodReadyToStartContainers: true,
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReady:                  true,
	corev1.AllContainersRestarting:   true,
}

// snapshot returns the pod with the node's current view of its status.
// While a restart of all containers removes them, that is the status the
// pod had when the restart began: the kubelet reports nothing in between.
func (r *podRun) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	pod := r.pod.DeepCopy()
	if r.frozen != nil {
		pod.Status = *r.frozen.DeepCopy()
		return pod
	}
	pod.Status = *r.statusLocked()
	return pod
}

// statusLocked computes the pod's status from its containers. Called with
// r.mu held.
func (r *podRun) statusLocked() *corev1.PodStatus {
	st := r.pod.Status.DeepCopy()
	st.HostIP = HostIP
	st.HostIPs = []corev1.HostIP{{IP: HostIP}}
	st.StartTime = r.startTime
	if r.podIP != "" {
		st.PodIP = r.podIP
		st.PodIPs = []corev1.PodIP{{IP: r.podIP}}
	}
	st.InitContainerStatuses = r.statuses(r.inits)
	st.ContainerStatuses = r.statuses(r.mains)
	st.Phase = r.currentPhase()
	st.Reason, st.Message = r.reason, r.message
	if st.Phase == corev1.PodPending && !r.sandbox.ready && r.sandbox.message != "" {
		st.Message = r.sandbox.message
	}
	st.Conditions = r.conditions(st)
	// Remember the conditions so transition times persist.
	r.pod.Status.Conditions = st.Conditions
	return st
}

// conditions returns the conditions of st the node does not manage,
// followed by the node-managed ones as the kubelet generates them from the
// container statuses and phase in st. Called with r.mu held.
func (r *podRun) conditions(st *corev1.PodStatus) []corev1.PodCondition {
	var conds []corev1.PodCondition
	for _, c := range st.Conditions {
		if !managedConditions[c.Type] {
			conds = append(conds, c)
		}
	}
	prev := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range r.pod.Status.Conditions {
		prev[c.Type] = c
	}
	spec := &r.pod.Spec
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	all := append(append([]corev1.ContainerStatus(nil), st.InitContainerStatuses...), st.ContainerStatuses...)
	ready := containersReadyCondition(spec, all, st.Phase)
	podReady := ready
	podReady.Type = corev1.PodReady
	gen := []corev1.PodCondition{
		boolCondition(corev1.PodReadyToStartContainers, r.sandbox.ready && !terminal),
		initializedCondition(spec, all, st.Phase, prev[corev1.PodInitialized].Status == corev1.ConditionTrue),
		podReady,
		ready,
	}
	if canRestartAll(spec) {
		gen = append(gen, restartingCondition(st.Phase, r.restartingAllLocked()))
	}
	for _, c := range gen {
		// Keep the transition time while the status does not change.
		if old, seen := prev[c.Type]; seen && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.Now()
		}
		conds = append(conds, c)
	}
	return conds
}

func boolCondition(t corev1.PodConditionType, ok bool) corev1.PodCondition {
	if ok {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
	}
	return corev1.PodCondition{Type: t, Status: corev1.ConditionFalse}
}

// containersReadyCondition is ContainersReady as the kubelet generates it:
// True when every app container and sidecar is ready, False naming the
// unready ones, and False with the phase's reason once the pod ended.
func containersReadyCondition(spec *corev1.PodSpec, all []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}
	switch phase {
	case corev1.PodSucceeded:
		c.Reason = "PodCompleted"
		return c
	case corev1.PodFailed:
		c.Reason = "PodFailed"
		return c
	}
	var unready []string
	for _, ic := range spec.InitContainers {
		if isSidecar(&ic) && !statusOf(all, ic.Name).Ready {
			unready = append(unready, ic.Name)
		}
	}
	for _, mc := range spec.Containers {
		if !statusOf(all, mc.Name).Ready {
			unready = append(unready, mc.Name)
		}
	}
	if len(unready) > 0 {
		c.Reason = "ContainersNotReady"
		c.Message = fmt.Sprintf("containers with unready status: %s", unready)
		return c
	}
	c.Status = corev1.ConditionTrue
	return c
}

// initializedCondition is Initialized as the kubelet generates it: True
// once every regular init container has completed and every sidecar has
// started, or an app container has run. A pod that was initialized stays
// so, also while its init containers run again after a restart of all
// containers.
func initializedCondition(spec *corev1.PodSpec, all []corev1.ContainerStatus, phase corev1.PodPhase, wasTrue bool) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if phase == corev1.PodSucceeded {
		c.Reason = "PodCompleted"
		return c
	}
	for _, mc := range spec.Containers {
		if s := statusOf(all, mc.Name); s.State.Running != nil || s.State.Terminated != nil {
			return c
		}
	}
	var incomplete []string
	for _, ic := range spec.InitContainers {
		s := statusOf(all, ic.Name)
		done := s.Ready
		if isSidecar(&ic) {
			done = s.Started != nil && *s.Started
		}
		if !done {
			incomplete = append(incomplete, ic.Name)
		}
	}
	if len(incomplete) > 0 && !wasTrue {
		c.Status = corev1.ConditionFalse
		c.Reason = "ContainersNotInitialized"
		c.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	return c
}

// restartingCondition is AllContainersRestarting as the kubelet generates
// it for a pod with a RestartAllContainers rule: True while a restart of all
// containers removes them, False otherwise, with the phase's reason once the
// pod ended.
func restartingCondition(phase corev1.PodPhase, restarting bool) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.AllContainersRestarting, Status: corev1.ConditionFalse}
	switch {
	case phase == corev1.PodSucceeded:
		c.Reason = "PodCompleted"
	case phase == corev1.PodFailed:
		c.Reason = "PodFailed"
	case restarting:
		c.Status = corev1.ConditionTrue
		c.Reason = reasonRestartAllRun
		c.Message = messageRestartAllRun
	}
	return c
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func statusOf(all []corev1.ContainerStatus, name string) corev1.ContainerStatus {
	for _, s := range all {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

// currentPhase derives the phase from the containers unless the pod has
// already reached a terminal phase. As the kubelet does, a pod stays
// Pending until every app container has started once: a controller that
// sees Running may take the process for started, and after a node restart
// a container whose status never left Waiting is started afresh, not
// reported lost. A container that has run (before a node restart too) and
// waits to run again keeps the pod Running. After a restart of all
// containers the kubelet's phase is Pending again while a regular init
// container runs (or a sidecar has not started); the node's is too.
func (r *podRun) currentPhase() corev1.PodPhase {
	if r.phase == corev1.PodSucceeded || r.phase == corev1.PodFailed {
		return r.phase
	}
	if !r.initDone || r.reinitializing() {
		return corev1.PodPending
	}
	for _, c := range r.mains {
		if c.state.Waiting != nil && !c.everStarted {
			return corev1.PodPending
		}
	}
	return corev1.PodRunning
}

func (r *podRun) statuses(cs []*ctr) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		started := c.started
		imageID := c.imageID
		if imageID == "" {
			imageID = "procnode://" + strings.TrimPrefix(c.spec.Image, "procnode://")
		}
		s := corev1.ContainerStatus{
			Name:                 c.spec.Name,
			State:                *c.state.DeepCopy(),
			LastTerminationState: *c.last.DeepCopy(),
			Ready:                c.ready,
			RestartCount:         c.restartCount,
			Image:                c.spec.Image,
			ImageID:              imageID,
			ContainerID:          c.containerID,
			Started:              &started,
		}
		out = append(out, s)
	}
	return out
}

// finalizeStatuses settles every container after the pod stopped: nothing
// runs any more, and a container waiting for a restart shows how it ended.
// Called with r.mu held.
func (r *podRun) finalizeStatuses() {
	for _, c := range append(append([]*ctr(nil), r.inits...), r.mains...) {
		c.started, c.ready = false, false
		if c.state.Waiting != nil && c.last.Terminated != nil {
			c.state, c.last = c.last, corev1.ContainerState{}
		}
	}
	if r.phase == corev1.PodSucceeded || r.phase == corev1.PodFailed {
		return
	}
	r.phase = corev1.PodSucceeded
	for _, c := range r.mains {
		if t := c.state.Terminated; t == nil || t.ExitCode != 0 {
			r.phase = corev1.PodFailed
		}
	}
}
