package failure

// Completion codes.
//
// Positive codes are container exit codes, so that a reader recognises them:
// an unrecognised failure reports the exit code itself, and the signal rules
// of the default table report 128+signal. Muster keeps FrameworkController's
// numbers wherever it has the same outcome, so that people and tools that
// know one know the other.
//
// Reserved for Muster (a user FailurePattern may not produce them):
// [200, 219] for the container exit-code contract, and [-1999, 0] for
// outcomes the operator makes and for the default table.
//
//	code   phrase                               type      attributes
//	   0   Succeeded                            Succeeded
//	 200   ContainerTransientFailed             Failed    Transient            (container exited 200)
//	 201   ContainerTransientConflictFailed     Failed    Transient, Conflict  (container exited 201)
//	 210   ContainerPermanentFailed             Failed    Permanent            (container exited 210)
//	-101   PodDeletedExternally                 Failed    Transient            (pod gone before it ended)
//	-120   PodCreationTransientError            Failed    Transient            (creation is retried; completes nothing)
//	-200   PodCreationPermanentError            Failed    Permanent
//	-210   StopRequested                        Failed    Permanent            (never retried)
//	-220   AttemptCompletion                    Failed    Permanent            (never retried)
//	-230   ScaleDownDeletion                    Failed    Permanent            (never retried)
//	-300   PodFailedWithoutFailedContainer      Failed    -
//	-310   PodCreationUnknownError              Failed    -
//
// Default table (after the user's patterns; first match wins, in this order):
//
//	-1000  PodEvicted                 pod reason Evicted                               Transient
//	-1001  PodNodeLost                pod reason NodeLost                              Transient
//	-1002  PodOutOfResource           pod reason OutOf* (kubelet admission)            Transient
//	-1003  PodPreempted               pod reason Preempting                            Transient
//	-1004  PodDeadlineExceeded        pod reason DeadlineExceeded                      Permanent
//	-1005  PodForbidden               pod reason *Forbidden (e.g. SysctlForbidden)     Permanent
//	-1006  PodAdmissionFailed         pod reason UnexpectedAdmissionError,
//	                                  UnknownReason, InvalidNodeInfo,
//	                                  UnexpectedPredicateFailureType                   Transient
//	-1007  PodNodeShutdown            pod reason Shutdown, NodeShutdown, Terminated    Transient
//	-1008  PodDisrupted               DisruptionTarget condition                       Transient
//	-1200  ContainerOOMKilled         container reason OOMKilled                       Permanent
//	-1201  ContainerCannotRun         container reason ContainerCannotRun, or exit 125 -
//	-1202  ContainerNotExecutable     exit 126                                         Permanent
//	-1203  ContainerCommandNotFound   exit 127, or exit 128 with "not found"           Permanent
//	-1204  ContainerStartFailed       exit 128                                         -
//	-1205  ContainerStatusUnknown     container reason ContainerStatusUnknown          Transient
//	                                  (its node lost it, e.g. in a restart)
//	 130   ContainerSigIntReceived    signal 2  (SIGINT)                               Transient
//	 131   ContainerSigQuitReceived   signal 3  (SIGQUIT)                              Transient
//	 132   ContainerSigIllReceived    signal 4  (SIGILL)                               Permanent
//	 134   ContainerSigAbrtReceived   signal 6  (SIGABRT)                              -
//	 135   ContainerSigBusReceived    signal 7  (SIGBUS)                               Permanent
//	 136   ContainerSigFpeReceived    signal 8  (SIGFPE)                               Permanent
//	 137   ContainerSigKillReceived   signal 9  (SIGKILL)                              Transient
//	 139   ContainerSigSegvReceived   signal 11 (SIGSEGV)                              Permanent
//	 141   ContainerSigPipeReceived   signal 13 (SIGPIPE)                              Permanent
//	 143   ContainerSigTermReceived   signal 15 (SIGTERM)                              Transient
//
// Anything else that failed: the exit code of the failed container that
// finished first, phrase ContainerUnrecognizedFailed, no attributes.
const (
	CodeSucceeded = 0

	// The container exit-code contract: a program exits with one of these
	// to tell the operator what kind of failure it hit.
	CodeContainerTransientFailed         = 200
	CodeContainerTransientConflictFailed = 201
	CodeContainerPermanentFailed         = 210

	// Outcomes the operator makes itself.
	CodePodDeletedExternally            = -101
	CodePodCreationTransientError       = -120
	CodePodCreationPermanentError       = -200
	CodeStopRequested                   = -210
	CodeAttemptCompletion               = -220
	CodeScaleDownDeletion               = -230
	CodePodFailedWithoutFailedContainer = -300
	CodePodCreationUnknownError         = -310

	// The default table.
	CodePodEvicted               = -1000
	CodePodNodeLost              = -1001
	CodePodOutOfResource         = -1002
	CodePodPreempted             = -1003
	CodePodDeadlineExceeded      = -1004
	CodePodForbidden             = -1005
	CodePodAdmissionFailed       = -1006
	CodePodNodeShutdown          = -1007
	CodePodDisrupted             = -1008
	CodeContainerOOMKilled       = -1200
	CodeContainerCannotRun       = -1201
	CodeContainerNotExecutable   = -1202
	CodeContainerCommandNotFound = -1203
	CodeContainerStartFailed     = -1204
	CodeContainerStatusUnknown   = -1205
)

// PhraseContainerUnrecognizedFailed is the phrase of a failure no pattern
// matched; its code is the container's exit code.
const PhraseContainerUnrecognizedFailed = "ContainerUnrecognizedFailed"

// Reserved code ranges, inclusive.
const (
	reservedContainerMin = 200
	reservedContainerMax = 219
	reservedMusterMin    = -1999
	reservedMusterMax    = 0
)

// IsReservedCode reports whether code belongs to Muster and so may not be
// produced by a user's FailurePattern: a user code there would be mistaken
// for one of Muster's own outcomes.
func IsReservedCode(code int32) bool {
	return (code >= reservedContainerMin && code <= reservedContainerMax) ||
		(code >= reservedMusterMin && code <= reservedMusterMax)
}

// predefined holds the fixed completions the operator itself produces and
// the container exit-code contract. It is never modified.
var predefined = map[int32]Completion{
	CodeSucceeded:                        {Phrase: "Succeeded", Type: CompletionSucceeded},
	CodeContainerTransientFailed:         failed("ContainerTransientFailed", AttributeTransient),
	CodeContainerTransientConflictFailed: failed("ContainerTransientConflictFailed", AttributeTransient, AttributeConflict),
	CodeContainerPermanentFailed:         failed("ContainerPermanentFailed", AttributePermanent),
	CodePodDeletedExternally:             failed("PodDeletedExternally", AttributeTransient),
	CodePodCreationTransientError:        failed("PodCreationTransientError", AttributeTransient),
	CodePodCreationPermanentError:        failed("PodCreationPermanentError", AttributePermanent),
	CodeStopRequested:                    failed("StopRequested", AttributePermanent),
	CodeAttemptCompletion:                failed("AttemptCompletion", AttributePermanent),
	CodeScaleDownDeletion:                failed("ScaleDownDeletion", AttributePermanent),
	CodePodFailedWithoutFailedContainer:  failed("PodFailedWithoutFailedContainer"),
	CodePodCreationUnknownError:          failed("PodCreationUnknownError"),
}

// Predefined returns the completion of one of the operator's own codes or
// of the container exit-code contract (the first two tables above), with
// the given diagnostics. ok is false for any other code.
func Predefined(code int32, diagnostics string) (c Completion, ok bool) {
	c, ok = predefined[code]
	if !ok {
		return Completion{}, false
	}
	c.Code = code
	c.Attributes = append([]Attribute(nil), c.Attributes...)
	c.Diagnostics = diagnostics
	return c, true
}

// mustPredefined is Predefined for codes this package knows exist.
func mustPredefined(code int32, diagnostics string) Completion {
	c, _ := Predefined(code, diagnostics)
	return c
}

// failed is a failure completion with phrase and attributes, for tables.
func failed(phrase string, attrs ...Attribute) Completion {
	return Completion{Phrase: phrase, Type: CompletionFailed, Attributes: sortAttributes(attrs)}
}
