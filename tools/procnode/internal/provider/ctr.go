package provider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/cgroup"
	"github.com/muster-dev/muster/tools/procnode/internal/logs"
	"github.com/muster-dev/muster/tools/procnode/internal/proc"
)

// ctr is the node's record of one container; guarded by podRun.mu.
type ctr struct {
	spec    corev1.Container
	isInit  bool
	sidecar bool // an init container with restartPolicy Always

	restartCount int32
	everStarted  bool // a previous attempt exists (also across node restarts)
	state        corev1.ContainerState
	last         corev1.ContainerState
	started      bool
	ready        bool
	containerID  string
	imageID      string // the mirror's repo@digest when run from an image
	backoff      time.Duration
	pullBackoff  time.Duration
	// final means the container will not run again (by its restart policy,
	// or because it already finished before the node restarted).
	final bool
	// removed means a restart of all containers removed the last attempt
	// and already counted the next one in restartCount.
	removed bool
	cur     *attempt
	sup     *supervision // the supervisor of the current round, if any
}

// attempt is one run of a container's process.
type attempt struct {
	index    int32 // restart count at start; names the log file
	proc     *proc.Process
	logw     *logs.Writer
	logPath  string
	errFile  string
	termFile string
	env      []string
	workDir  string
	cgroup   *cgroup.Group
}

func newCtr(c corev1.Container, isInit bool, prev map[string]corev1.ContainerStatus) *ctr {
	x := &ctr{spec: c, isInit: isInit}
	x.sidecar = isInit && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	x.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	if !isInit {
		x.state.Waiting.Reason = "PodInitializing"
	}
	if s, ok := prev[c.Name]; ok {
		// The node restarted while the pod existed: continue its history.
		x.restartCount = s.RestartCount
		x.everStarted = s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil
		x.last = s.LastTerminationState
		if s.State.Terminated != nil {
			x.last = s.State
		}
		// Removed by a restart of all containers: its next start is counted.
		x.removed = s.State.Waiting != nil && s.State.Waiting.Reason == reasonRestartingAll
	}
	return x
}

// regularInit reports whether c is an init container that runs to
// completion (not a sidecar).
func (c *ctr) regularInit() bool { return c.isInit && !c.sidecar }

// resume decides, after a node restart, whether a main container that had
// already run should run again under the pod's restart policy. It returns
// false (and records why) for containers whose outcome is settled.
func (c *ctr) resume(policy corev1.RestartPolicy, prev corev1.ContainerStatus, hadStatus bool) bool {
	if !hadStatus || c.isInit {
		return true
	}
	switch {
	case prev.State.Terminated != nil:
		if !containerShouldRestart(&c.spec, policy, prev.State.Terminated.ExitCode) {
			c.state = prev.State
			c.final = true
			return false
		}
	case prev.State.Running != nil && !containerRestartable(&c.spec, policy):
		// The process died with the previous node process and may not rerun.
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "ContainerStatusUnknown",
			Message:   "The container could not be located when the process node restarted",
			StartedAt: prev.State.Running.StartedAt, FinishedAt: metav1.Now(),
		}}
		c.final = true
		return false
	}
	return true
}

// shouldRestart applies a pod-level restart policy to an exit code.
func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

const maxBackoff = 5 * time.Minute

// nextBackoff returns the crash-loop delay before the next attempt and
// doubles it for the one after; a long healthy run resets it. As the
// kubelet's, the first restart is at once (its back-off has no entry for
// the container yet) and the next waits initial: 0, 10 s, 20 s, ...
func (c *ctr) nextBackoff(initial time.Duration, ranFor time.Duration) time.Duration {
	if c.backoff == 0 || ranFor > 10*time.Minute {
		c.backoff = initial
		return 0
	}
	d := c.backoff
	c.backoff = min(c.backoff*2, maxBackoff)
	return d
}

// nextPullBackoff returns the delay before the next pull of the image and
// doubles it for the one after, as the kubelet's image back-off does.
func (c *ctr) nextPullBackoff(initial time.Duration) time.Duration {
	if c.pullBackoff == 0 {
		c.pullBackoff = initial
	}
	d := c.pullBackoff
	c.pullBackoff = min(c.pullBackoff*2, maxBackoff)
	return d
}
