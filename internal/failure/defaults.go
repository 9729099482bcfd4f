package failure

import "regexp"

// The tables below are built once and never modified. Their codes and
// order are documented in codes.go.

// contractRules are the container exit codes a program uses to tell the
// operator what kind of failure it hit. They come before the user's
// patterns.
var contractRules = []rule{
	exitRule(CodeContainerTransientFailed, mustPredefined(CodeContainerTransientFailed, ""), 200, 200),
	exitRule(CodeContainerTransientConflictFailed, mustPredefined(CodeContainerTransientConflictFailed, ""), 201, 201),
	exitRule(CodeContainerPermanentFailed, mustPredefined(CodeContainerPermanentFailed, ""), 210, 210),
}

// defaultRules come after the user's patterns. Pod-level rules come first:
// when the infrastructure ends a pod its containers die of it, with codes
// (137, 143, or whatever a program does on SIGTERM) that say nothing about
// the program.
var defaultRules = []rule{
	podRule(`^Evicted$`, CodePodEvicted, failed("PodEvicted", AttributeTransient)),
	podRule(`^NodeLost$`, CodePodNodeLost, failed("PodNodeLost", AttributeTransient)),
	// Kubelet admission: OutOfcpu, OutOfmemory, OutOfpods, ...
	podRule(`^OutOf\S+$`, CodePodOutOfResource, failed("PodOutOfResource", AttributeTransient)),
	podRule(`^Preempting$`, CodePodPreempted, failed("PodPreempted", AttributeTransient)),
	// The pod's own activeDeadlineSeconds: a retry would run as long.
	podRule(`^DeadlineExceeded$`, CodePodDeadlineExceeded, failed("PodDeadlineExceeded", AttributePermanent)),
	// Kubelet admission refusing the pod's spec, e.g. SysctlForbidden.
	podRule(`Forbidden$`, CodePodForbidden, failed("PodForbidden", AttributePermanent)),
	podRule(`^(UnexpectedAdmissionError|UnknownReason|InvalidNodeInfo|UnexpectedPredicateFailureType)$`,
		CodePodAdmissionFailed, failed("PodAdmissionFailed", AttributeTransient)),
	// Graceful node shutdown.
	podRule(`^(Shutdown|NodeShutdown|Terminated)$`, CodePodNodeShutdown, failed("PodNodeShutdown", AttributeTransient)),
	// Whatever the reason text, a DisruptionTarget condition means the
	// scheduler, the API or the kubelet chose to end the pod.
	{disrupted: true, result: withCode(CodePodDisrupted, failed("PodDisrupted", AttributeTransient))},

	// Permanent: the same program with the same limit runs out again. The
	// ExitCode restart policy still retries it; see the package doc.
	containerReasonRule(`^OOMKilled$`, CodeContainerOOMKilled, failed("ContainerOOMKilled", AttributePermanent)),
	containerReasonRule(`^ContainerCannotRun$`, CodeContainerCannotRun, failed("ContainerCannotRun")),
	exitRule(CodeContainerCannotRun, failed("ContainerCannotRun"), 125, 125),
	exitRule(CodeContainerNotExecutable, failed("ContainerNotExecutable", AttributePermanent), 126, 126),
	exitRule(CodeContainerCommandNotFound, failed("ContainerCommandNotFound", AttributePermanent), 127, 127),
	{
		container: &containerRule{message: regexp.MustCompile(`not found`), exitCodes: &Range{128, 128}},
		result:    withCode(CodeContainerCommandNotFound, failed("ContainerCommandNotFound", AttributePermanent)),
	},
	// Runtimes report 128 when they could not start the process at all.
	exitRule(CodeContainerStartFailed, failed("ContainerStartFailed"), 128, 128),
	// The kubelet found no trace of a container that was running (its
	// node restarted, or its runtime lost it): nothing the program did,
	// so, like a lost node, not charged. It comes before the signal rules:
	// such a container is reported with exit code 137.
	containerReasonRule(`^ContainerStatusUnknown$`, CodeContainerStatusUnknown, failed("ContainerStatusUnknown", AttributeTransient)),

	signalRule(2, "ContainerSigIntReceived", AttributeTransient),
	signalRule(3, "ContainerSigQuitReceived", AttributeTransient),
	signalRule(4, "ContainerSigIllReceived", AttributePermanent),
	signalRule(6, "ContainerSigAbrtReceived"),
	signalRule(7, "ContainerSigBusReceived", AttributePermanent),
	signalRule(8, "ContainerSigFpeReceived", AttributePermanent),
	signalRule(9, "ContainerSigKillReceived", AttributeTransient),
	signalRule(11, "ContainerSigSegvReceived", AttributePermanent),
	signalRule(13, "ContainerSigPipeReceived", AttributePermanent),
	signalRule(15, "ContainerSigTermReceived", AttributeTransient),
}

func withCode(code int32, c Completion) Completion {
	c.Code = code
	return c
}

func podRule(reason string, code int32, c Completion) rule {
	return rule{podReason: regexp.MustCompile(reason), result: withCode(code, c)}
}

func containerReasonRule(reason string, code int32, c Completion) rule {
	return rule{container: &containerRule{reason: regexp.MustCompile(reason)}, result: withCode(code, c)}
}

func exitRule(code int32, c Completion, minCode, maxCode int32) rule {
	return rule{container: &containerRule{exitCodes: &Range{minCode, maxCode}}, result: withCode(code, c)}
}

// signalRule reports the code a shell would: 128 + the signal.
func signalRule(signal int32, phrase string, attrs ...Attribute) rule {
	return rule{container: &containerRule{signals: &Range{signal, signal}}, result: withCode(128+signal, failed(phrase, attrs...))}
}
