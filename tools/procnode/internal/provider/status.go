package provider

import (
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
}

// snapshot returns the pod with the node's current view of its status.
func (r *podRun) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	pod := r.pod.DeepCopy()
	st := &pod.Status
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

	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	conds := r.conditions(pod.Status.Conditions, terminal)
	st.Conditions = conds
	// Remember the conditions so transition times persist.
	r.pod.Status.Conditions = conds
	return pod
}

// conditions returns the conditions in current that the node does not
// manage, followed by the node-managed ones with their present values.
// Called with r.mu held.
func (r *podRun) conditions(current []corev1.PodCondition, terminal bool) []corev1.PodCondition {
	allReady := r.containersReady()
	var conds []corev1.PodCondition
	for _, c := range current {
		if !managedConditions[c.Type] {
			conds = append(conds, c)
		}
	}
	prev := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range r.pod.Status.Conditions {
		prev[c.Type] = c
	}
	cond := func(t corev1.PodConditionType, ok bool, reason string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason}
		if ok {
			c.Status = corev1.ConditionTrue
			c.Reason = ""
		}
		// Keep the transition time while the status does not change.
		if old, seen := prev[t]; seen && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.Now()
		}
		conds = append(conds, c)
	}
	notReady := "ContainersNotReady"
	if terminal {
		notReady = "PodCompleted"
	}
	cond(corev1.PodReadyToStartContainers, r.sandbox.ready && !terminal, "")
	cond(corev1.PodInitialized, r.initDone, "ContainersNotInitialized")
	cond(corev1.ContainersReady, allReady && !terminal, notReady)
	cond(corev1.PodReady, allReady && !terminal, notReady)
	return conds
}

// containersReady reports whether the pod has containers and all of them,
// sidecars included, are ready. Called with r.mu held.
func (r *podRun) containersReady() bool {
	allReady := len(r.mains) > 0
	for _, c := range r.mains {
		allReady = allReady && c.ready
	}
	for _, c := range r.inits {
		if c.sidecar {
			allReady = allReady && c.ready
		}
	}
	return allReady
}

// currentPhase derives the phase from the containers unless the pod has
// already reached a terminal phase. As the kubelet does, a pod stays
// Pending until every app container has started once: a controller that
// sees Running may take the process for started, and after a node restart
// a container whose status never left Waiting is started afresh, not
// reported lost. A container that has run (before a node restart too) and
// waits to run again keeps the pod Running.
func (r *podRun) currentPhase() corev1.PodPhase {
	if r.phase == corev1.PodSucceeded || r.phase == corev1.PodFailed {
		return r.phase
	}
	if !r.initDone {
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
