package failure

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ctr is a terminated container that finished after seconds past t0.
func ctr(name string, code int32, reason string, seconds int) ContainerEnd {
	return ContainerEnd{Name: name, ExitCode: code, Reason: reason, FinishedAt: t0.Add(time.Duration(seconds) * time.Second)}
}

// failedPod is a Failed pod with the given main containers.
func failedPod(containers ...ContainerEnd) PodEnd {
	return PodEnd{Phase: corev1.PodFailed, Containers: containers}
}

// podFailedFor is a Failed pod with a pod-level reason and a container
// killed as the pod was torn down.
func podFailedFor(reason string) PodEnd {
	p := failedPod(ctr("main", 143, "Error", 0))
	p.Reason = reason
	return p
}

// outcome is the part of a Completion the default table decides.
type outcome struct {
	Code       int32
	Phrase     string
	Attributes []Attribute
	Container  string
}

func outcomeOf(c Completion) outcome {
	return outcome{c.Code, c.Phrase, c.Attributes, c.Container}
}

func TestDefaultTable(t *testing.T) {
	T, P := AttributeTransient, AttributePermanent
	withMessage := func(c ContainerEnd, msg string) ContainerEnd { c.Message = msg; return c }
	withSignal := func(c ContainerEnd, sig int32) ContainerEnd { c.Signal = sig; return c }
	disrupted := failedPod(ctr("main", 1, "Error", 0))
	disrupted.Disruption = &Disruption{Reason: "PreemptionByScheduler"}
	cases := map[string]struct {
		end  PodEnd
		want outcome
	}{
		"evicted":                {podFailedFor("Evicted"), outcome{-1000, "PodEvicted", []Attribute{T}, ""}},
		"node lost":              {podFailedFor("NodeLost"), outcome{-1001, "PodNodeLost", []Attribute{T}, ""}},
		"out of cpu":             {podFailedFor("OutOfcpu"), outcome{-1002, "PodOutOfResource", []Attribute{T}, ""}},
		"out of pods":            {podFailedFor("OutOfpods"), outcome{-1002, "PodOutOfResource", []Attribute{T}, ""}},
		"preempting":             {podFailedFor("Preempting"), outcome{-1003, "PodPreempted", []Attribute{T}, ""}},
		"deadline exceeded":      {podFailedFor("DeadlineExceeded"), outcome{-1004, "PodDeadlineExceeded", []Attribute{P}, ""}},
		"forbidden":              {podFailedFor("Forbidden"), outcome{-1005, "PodForbidden", []Attribute{P}, ""}},
		"sysctl forbidden":       {podFailedFor("SysctlForbidden"), outcome{-1005, "PodForbidden", []Attribute{P}, ""}},
		"unexpected admission":   {podFailedFor("UnexpectedAdmissionError"), outcome{-1006, "PodAdmissionFailed", []Attribute{T}, ""}},
		"unknown reason":         {podFailedFor("UnknownReason"), outcome{-1006, "PodAdmissionFailed", []Attribute{T}, ""}},
		"invalid node info":      {podFailedFor("InvalidNodeInfo"), outcome{-1006, "PodAdmissionFailed", []Attribute{T}, ""}},
		"unexpected predicate":   {podFailedFor("UnexpectedPredicateFailureType"), outcome{-1006, "PodAdmissionFailed", []Attribute{T}, ""}},
		"node shutdown":          {podFailedFor("Terminated"), outcome{-1007, "PodNodeShutdown", []Attribute{T}, ""}},
		"node shutdown, old":     {podFailedFor("Shutdown"), outcome{-1007, "PodNodeShutdown", []Attribute{T}, ""}},
		"disruption target":      {disrupted, outcome{-1008, "PodDisrupted", []Attribute{T}, ""}},
		"reasons are anchored":   {podFailedFor("NotEvicted"), outcome{143, "ContainerSigTermReceived", []Attribute{T}, "main"}},
		"OOMKilled is permanent": {failedPod(ctr("main", 137, "OOMKilled", 0)), outcome{-1200, "ContainerOOMKilled", []Attribute{P}, "main"}},
		"container cannot run":   {failedPod(ctr("main", 127, "ContainerCannotRun", 0)), outcome{-1201, "ContainerCannotRun", nil, "main"}},
		"exit 125":               {failedPod(ctr("main", 125, "Error", 0)), outcome{-1201, "ContainerCannotRun", nil, "main"}},
		"exit 126":               {failedPod(ctr("main", 126, "Error", 0)), outcome{-1202, "ContainerNotExecutable", []Attribute{P}, "main"}},
		"exit 127":               {failedPod(ctr("main", 127, "Error", 0)), outcome{-1203, "ContainerCommandNotFound", []Attribute{P}, "main"}},
		"exit 128, not found": {failedPod(withMessage(ctr("main", 128, "StartError", 0), `exec: "trian.py": executable file not found in $PATH`)),
			outcome{-1203, "ContainerCommandNotFound", []Attribute{P}, "main"}},
		"exit 128":             {failedPod(ctr("main", 128, "StartError", 0)), outcome{-1204, "ContainerStartFailed", nil, "main"}},
		"container lost":       {failedPod(ctr("main", 137, "ContainerStatusUnknown", 0)), outcome{-1205, "ContainerStatusUnknown", []Attribute{T}, "main"}},
		"SIGINT":               {failedPod(ctr("main", 130, "Error", 0)), outcome{130, "ContainerSigIntReceived", []Attribute{T}, "main"}},
		"SIGQUIT":              {failedPod(ctr("main", 131, "Error", 0)), outcome{131, "ContainerSigQuitReceived", []Attribute{T}, "main"}},
		"SIGILL":               {failedPod(ctr("main", 132, "Error", 0)), outcome{132, "ContainerSigIllReceived", []Attribute{P}, "main"}},
		"SIGABRT is unknown":   {failedPod(ctr("main", 134, "Error", 0)), outcome{134, "ContainerSigAbrtReceived", nil, "main"}},
		"SIGBUS":               {failedPod(ctr("main", 135, "Error", 0)), outcome{135, "ContainerSigBusReceived", []Attribute{P}, "main"}},
		"SIGFPE":               {failedPod(ctr("main", 136, "Error", 0)), outcome{136, "ContainerSigFpeReceived", []Attribute{P}, "main"}},
		"SIGKILL":              {failedPod(ctr("main", 137, "Error", 0)), outcome{137, "ContainerSigKillReceived", []Attribute{T}, "main"}},
		"SIGSEGV":              {failedPod(ctr("main", 139, "Error", 0)), outcome{139, "ContainerSigSegvReceived", []Attribute{P}, "main"}},
		"SIGPIPE":              {failedPod(ctr("main", 141, "Error", 0)), outcome{141, "ContainerSigPipeReceived", []Attribute{P}, "main"}},
		"SIGTERM":              {failedPod(ctr("main", 143, "Error", 0)), outcome{143, "ContainerSigTermReceived", []Attribute{T}, "main"}},
		"SIGUSR1 is not in it": {failedPod(ctr("main", 138, "Error", 0)), outcome{138, PhraseContainerUnrecognizedFailed, nil, "main"}},
		"a reported signal counts without its exit code": {failedPod(withSignal(ctr("main", 0, "Error", 0), 9)),
			outcome{137, "ContainerSigKillReceived", []Attribute{T}, "main"}},
		"a reported signal wins over the exit code": {failedPod(withSignal(ctr("main", 1, "Error", 0), 11)),
			outcome{139, "ContainerSigSegvReceived", []Attribute{P}, "main"}},
		"exit 200 is transient": {failedPod(ctr("main", 200, "Error", 0)), outcome{200, "ContainerTransientFailed", []Attribute{T}, "main"}},
		"exit 201 is transient conflict": {failedPod(ctr("main", 201, "Error", 0)),
			outcome{201, "ContainerTransientConflictFailed", []Attribute{T, AttributeConflict}, "main"}},
		"exit 210 is permanent": {failedPod(ctr("main", 210, "Error", 0)), outcome{210, "ContainerPermanentFailed", []Attribute{P}, "main"}},
		"pod rules come before container rules": {func() PodEnd {
			p := failedPod(ctr("main", 139, "Error", 0))
			p.Reason = "Evicted"
			return p
		}(), outcome{-1000, "PodEvicted", []Attribute{T}, ""}},
		"OOMKilled comes before SIGKILL": {failedPod(ctr("main", 137, "OOMKilled", 0)), outcome{-1200, "ContainerOOMKilled", []Attribute{P}, "main"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := outcomeOf(Classifier{}.Classify(tc.end))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultTableCodesAreReserved keeps the table's own codes out of what
// users may produce, so that a user's pattern is never mistaken for a
// default.
func TestDefaultTableCodesAreReserved(t *testing.T) {
	for i, r := range append(append([]rule(nil), contractRules...), defaultRules...) {
		signal := r.container != nil && r.container.signals != nil
		if !signal && !IsReservedCode(r.result.Code) {
			t.Errorf("rule %d (%s): code %d is not reserved", i, r.result.Phrase, r.result.Code)
		}
		if r.result.Type != CompletionFailed || r.result.Phrase == "" {
			t.Errorf("rule %d: incomplete result %+v", i, r.result)
		}
	}
}
