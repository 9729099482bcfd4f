package provider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// round is one start of the pod's containers from its first init
// container: the first, and one more after each restart of all containers
// (the RestartAllContainers action), which keeps the pod's sandbox: its
// UID, IP, network namespace and volumes.
type round struct {
	first bool // resumes what the pod's status said before a node restart
	// stop ends every container of the round: the pod stops, or all its
	// containers restart. sidecars ends the sidecars, also once the app
	// containers have finished.
	stop     *stopper
	sidecars *stopper
	// restarting (guarded by podRun.mu) is set when an exit matched a
	// RestartAllContainers rule: from then on no container of the round
	// starts, and the pod starts again once removed is closed.
	restarting bool
	removed    chan struct{}
}

// supervision is the supervisor of one container in a round.
type supervision struct {
	rd   *round
	stop *stopper
	done chan struct{} // closed when the supervisor has returned
}

// runRounds runs the pod's containers, and again from the first init
// container after every restart of all of them, until the pod ends or
// stops.
func (r *podRun) runRounds() {
	for first := true; ; first = false {
		rd := r.newRound(first)
		if r.runInits(rd) {
			r.runMains(rd)
		}
		if !r.awaitRestartAll(rd) {
			return
		}
	}
}

func (r *podRun) newRound(first bool) *round {
	rd := &round{first: first, stop: r.halt.child(), removed: make(chan struct{})}
	rd.sidecars = rd.stop.child()
	r.mu.Lock()
	r.round = rd
	r.mu.Unlock()
	return rd
}

// enroll gives c a supervisor in rd; it refuses once rd restarts all
// containers, since the kubelet starts none while it removes them.
func (r *podRun) enroll(rd *round, c *ctr) (*supervision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rd.restarting {
		return nil, false
	}
	parent := rd.stop
	if c.sidecar {
		parent = rd.sidecars
	}
	sv := &supervision{rd: rd, stop: parent.child(), done: make(chan struct{})}
	c.sup = sv
	return sv, true
}

// mayStart reports whether sv may start another attempt of its container.
func (r *podRun) mayStart(sv *supervision) bool {
	return !sv.stop.closed() && !r.roundOver(sv.rd)
}

// roundOver reports whether rd's containers stop: the pod stops, or all of
// them restart.
func (r *podRun) roundOver(rd *round) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return rd.restarting || rd.stop.closed()
}

// awaitRestartAll waits until a restart of all containers under way in rd
// has removed them; it reports whether the pod starts again.
func (r *podRun) awaitRestartAll(rd *round) bool {
	r.mu.Lock()
	restarting := rd.restarting
	r.mu.Unlock()
	if !restarting {
		return false
	}
	select {
	case <-rd.removed:
	case <-r.halt.done():
	}
	return !r.halt.closed()
}

// restartAllOnExit restarts all the pod's containers when c's exit with
// code matches one of its RestartAllContainers rules, as the kubelet does:
// the pod is reported as it was at the exit, with AllContainersRestarting
// True, while its containers are killed and removed; then each removed
// container is reported waiting (AllContainersRestarting goes False) and
// runRounds starts the pod again. It returns once all are removed and
// reports whether c's exit restarted them.
func (r *podRun) restartAllOnExit(c *ctr, code int32) bool {
	if !restartsAll(&c.spec, code) {
		return false
	}
	rd := c.sup.rd
	r.mu.Lock()
	if rd.restarting {
		// Another exit started it: this container is removed with the rest.
		r.mu.Unlock()
		return true
	}
	if r.phase == corev1.PodSucceeded || r.phase == corev1.PodFailed || r.stopping() {
		// A pod that ended or is being deleted does not start again.
		r.mu.Unlock()
		return false
	}
	rd.restarting = true
	r.frozen = r.statusLocked()
	order := r.removalOrderLocked()
	before := make(map[*ctr]corev1.ContainerState, len(order))
	for _, x := range order {
		before[x] = x.state
	}
	r.mu.Unlock()
	r.changed()
	r.logf("container %s exited with %d, matching a RestartAllContainers rule: restarting all containers", c.spec.Name, code)

	r.removeAll(rd, order, c)
	r.finishRestartAll(rd, before)
	return true
}

// removalOrderLocked is the order in which the kubelet removes the
// containers: those that did not trigger the restart first, app containers
// then init containers (each in spec order), and last the ones whose exit
// triggered it. Called with r.mu held.
func (r *podRun) removalOrderLocked() []*ctr {
	var victims, triggers []*ctr
	for _, cs := range [][]*ctr{r.mains, r.inits} {
		for _, c := range cs {
			if t := c.state.Terminated; t != nil && restartsAll(&c.spec, t.ExitCode) {
				triggers = append(triggers, c)
			} else {
				victims = append(victims, c)
			}
		}
	}
	return append(victims, triggers...)
}

// removeAll stops the round's containers one after the other in order, a
// running one with SIGTERM and SIGKILL after minKillGrace as the kubelet
// kills them here, and waits for each supervisor but self's (the caller's).
func (r *podRun) removeAll(rd *round, order []*ctr, self *ctr) {
	for _, c := range order {
		r.mu.Lock()
		sv := c.sup
		r.mu.Unlock()
		if c == self || sv == nil || sv.rd != rd {
			continue
		}
		sv.stop.close(time.Now().Add(minKillGrace))
		<-sv.done
	}
	// Nothing of the round is left to kill; this ends runInits' waits.
	rd.stop.close(time.Now())
}

// finishRestartAll reports the removed containers and lets the pod start
// again. A pod stopped meanwhile keeps the states its containers ended in.
func (r *podRun) finishRestartAll(rd *round, before map[*ctr]corev1.ContainerState) {
	r.mu.Lock()
	if !r.halt.closed() {
		for c, st := range before {
			c.markRemoved(st)
		}
		// Its init containers run again, which the pod's phase shows.
		r.reinit = r.initDone
	}
	// Closed with the status unfrozen, so that no status shows the
	// containers removed and the restart still under way.
	close(rd.removed)
	r.frozen = nil
	r.mu.Unlock()
	r.changed()
}

// markRemoved reports c, whose state was st when the restart of all
// containers began, once the restart has removed it. A container that ran
// or had ended is waiting to start again, its restart counted and its last
// state the removal (its own last exit is not kept); a fresh status has no
// container ID. One that was waiting (never started, or between two
// attempts) keeps its status: it had nothing to remove. Called with r.mu
// held.
func (c *ctr) markRemoved(st corev1.ContainerState) {
	c.final, c.started = false, false
	if st.Waiting != nil {
		return
	}
	if st.Running != nil {
		c.containerID, c.ready = "", false
	}
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: reasonRestartingAll, Message: messageRemovedForAll}}
	c.last = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		Reason: reasonRestartingAll, Message: messageRemovedForAll, ExitCode: 137}}
	c.restartCount++
	c.removed = true
}

// restartingAllLocked reports whether a restart of all containers is under
// way: one was started, or a container's exit matching a
// RestartAllContainers rule is about to start one. Called with r.mu held.
func (r *podRun) restartingAllLocked() bool {
	if rd := r.round; rd != nil && rd.restarting {
		select {
		case <-rd.removed:
		default:
			return true
		}
	}
	for _, c := range r.all() {
		if t := c.state.Terminated; t != nil && restartsAll(&c.spec, t.ExitCode) {
			return true
		}
	}
	return false
}

// reinitializing reports whether the pod, initialized before a restart of
// all containers, shows as Pending while it initializes again: as the
// kubelet's phase does, while a regular init container runs or a sidecar
// runs without having started. Called with r.mu held.
func (r *podRun) reinitializing() bool {
	if !r.reinit {
		return false
	}
	for _, c := range r.inits {
		if c.state.Running != nil && (c.regularInit() || !c.started) {
			return true
		}
	}
	return false
}
