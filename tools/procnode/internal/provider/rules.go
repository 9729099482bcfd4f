package provider

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Container restart rules: a container's own restartPolicy and
// restartPolicyRules (KEP-5307), and the rules' RestartAllContainers action
// (KEP-5532), as kubelet 1.36 applies them with both feature gates on (their
// default there).

// What the kubelet reports about a restart of all containers; clients may
// match on these strings, so they are the kubelet's own.
const (
	reasonRestartingAll  = "RestartingAllContainers"
	messageRemovedForAll = "The container is removed because RestartAllContainers in place"
	reasonRestartAllRun  = "RestartAllContainersStarted"
	messageRestartAllRun = "container exited with restart policy rule"
)

// minKillGrace is what the kubelet gives a container it kills without a
// grace period (as a restart of all containers does): SIGTERM, then SIGKILL
// after 2 s.
const minKillGrace = 2 * time.Second

// matchingRule returns the first of c's restartPolicyRules whose exit codes
// match code: rules are checked in order and the first match wins.
func matchingRule(c *corev1.Container, code int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		listed := slices.Contains(rule.ExitCodes.Values, code)
		switch rule.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if listed {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !listed {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}

// containerShouldRestart decides whether a container that exited with code
// runs again: by its first matching rule (both actions restart it), else by
// its own restartPolicy, else by the pod's. Rules count only on a container
// that sets its own policy, which the API requires of a container with rules.
func containerShouldRestart(c *corev1.Container, podPolicy corev1.RestartPolicy, code int32) bool {
	if c.RestartPolicy == nil {
		return shouldRestart(podPolicy, code)
	}
	if rule, ok := matchingRule(c, code); ok {
		switch rule.Action {
		case corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers:
			return true
		}
	}
	switch *c.RestartPolicy {
	case corev1.ContainerRestartPolicyAlways:
		return true
	case corev1.ContainerRestartPolicyOnFailure:
		return code != 0
	case corev1.ContainerRestartPolicyNever:
		return false
	}
	return shouldRestart(podPolicy, code)
}

// containerRestartable reports whether c may run again at all, for a
// container whose exit code is unknown (lost with the node): a Restart rule
// or its own policy other than Never, else the pod's policy other than Never.
func containerRestartable(c *corev1.Container, podPolicy corev1.RestartPolicy) bool {
	if c.RestartPolicy == nil {
		return podPolicy != corev1.RestartPolicyNever
	}
	for _, rule := range c.RestartPolicyRules {
		if rule.Action == corev1.ContainerRestartRuleActionRestart {
			return true
		}
	}
	return *c.RestartPolicy != corev1.ContainerRestartPolicyNever
}

// restartsAll reports whether c exiting with code restarts all the pod's
// containers.
func restartsAll(c *corev1.Container, code int32) bool {
	rule, ok := matchingRule(c, code)
	return ok && rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers
}

// canRestartAll reports whether any container of the pod has a
// RestartAllContainers rule: only such a pod carries the
// AllContainersRestarting condition.
func canRestartAll(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for _, rule := range cs[i].RestartPolicyRules {
				if rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// runsAgain decides whether c runs again after exiting with code while the
// pod runs. A sidecar always does; an init container that succeeded is done
// whatever its rules say, one that failed follows them; an app container
// follows them.
func (c *ctr) runsAgain(podPolicy corev1.RestartPolicy, code int32) bool {
	switch {
	case c.sidecar:
		return true
	case c.isInit:
		return code != 0 && containerShouldRestart(&c.spec, podPolicy, code)
	}
	return containerShouldRestart(&c.spec, podPolicy, code)
}
