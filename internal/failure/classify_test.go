package failure

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestClassify(t *testing.T) {
	T, P := AttributeTransient, AttributePermanent
	user := []FailurePattern{
		// Retry OOM kills under the budget instead of giving up.
		{ContainerReason: "^OOMKilled$", Code: 1137, Phrase: "OOMRetryable"},
		// A pod and a container condition together.
		{PodMessage: "rendezvous", ContainerName: "^worker$", ExitCodes: &Range{1, 2}, Code: 2001, Phrase: "RendezvousLost",
			Attributes: []Attribute{T, AttributeConflict}},
		// A user code for a container exit the program promised to mean
		// "retry" is shadowed by the contract.
		{ExitCodes: &Range{200, 210}, Code: 2002, Phrase: "Shadowed"},
		{ContainerMessage: "CUDA error", Code: 2003, Phrase: "BadGPU", Attributes: []Attribute{T}},
	}
	withMessage := func(p PodEnd, msg string) PodEnd { p.Message = msg; return p }
	cases := map[string]struct {
		patterns []FailurePattern
		end      PodEnd
		want     Completion
	}{
		"vanished, whatever its phase": {
			end:  PodEnd{Phase: corev1.PodRunning, Vanished: true},
			want: Completion{Code: -101, Phrase: "PodDeletedExternally", Type: CompletionFailed, Attributes: []Attribute{T}, Diagnostics: "the pod was deleted before it ended"},
		},
		"succeeded": {
			end:  PodEnd{Phase: corev1.PodSucceeded, Containers: []ContainerEnd{ctr("main", 0, "Completed", 0)}},
			want: Completion{Code: 0, Phrase: "Succeeded", Type: CompletionSucceeded},
		},
		"unmatched: the failed container that finished first": {
			end: PodEnd{Phase: corev1.PodFailed, Containers: []ContainerEnd{
				ctr("sidecar", 3, "Error", 5), ctr("main", 0, "Completed", 0), ctr("trainer", 1, "Error", 2),
			}},
			want: Completion{Code: 1, Phrase: PhraseContainerUnrecognizedFailed, Type: CompletionFailed,
				Diagnostics: `container "trainer"; exit code 1; reason "Error"`, Container: "trainer"},
		},
		"unmatched: an init container that failed first": {
			end: PodEnd{Phase: corev1.PodFailed, InitContainers: []ContainerEnd{ctr("fetch", 2, "Error", 0)},
				Containers: []ContainerEnd{ctr("main", 4, "Error", 0)}},
			want: Completion{Code: 2, Phrase: PhraseContainerUnrecognizedFailed, Type: CompletionFailed,
				Diagnostics: `container "fetch"; exit code 2; reason "Error"`, Container: "fetch"},
		},
		"no failed container": {
			end: PodEnd{Phase: corev1.PodFailed, Reason: "Mystery", Message: "gone",
				Containers: []ContainerEnd{ctr("main", 0, "Completed", 0)}},
			want: Completion{Code: -300, Phrase: "PodFailedWithoutFailedContainer", Type: CompletionFailed,
				Diagnostics: `pod reason "Mystery"; pod message "gone"`},
		},
		"default pod rule: diagnostics hold only the matched fields": {
			end: withMessage(podFailedFor("Evicted"), "The node was low on resource: memory."),
			want: Completion{Code: -1000, Phrase: "PodEvicted", Type: CompletionFailed, Attributes: []Attribute{T},
				Diagnostics: `pod reason "Evicted"`},
		},
		"default container rule names the container": {
			end: failedPod(ctr("main", 137, "OOMKilled", 0)),
			want: Completion{Code: -1200, Phrase: "ContainerOOMKilled", Type: CompletionFailed, Attributes: []Attribute{P},
				Diagnostics: `container "main"; reason "OOMKilled"`, Container: "main"},
		},
		"disruption diagnostics": {
			end: PodEnd{Phase: corev1.PodFailed, Disruption: &Disruption{Reason: "EvictionByEvictionAPI", Message: "drained"}},
			want: Completion{Code: -1008, Phrase: "PodDisrupted", Type: CompletionFailed, Attributes: []Attribute{T},
				Diagnostics: `disruption reason "EvictionByEvictionAPI"; disruption message "drained"`},
		},
		"signal diagnostics": {
			end: failedPod(ctr("main", 139, "Error", 0)),
			want: Completion{Code: 139, Phrase: "ContainerSigSegvReceived", Type: CompletionFailed, Attributes: []Attribute{P},
				Diagnostics: `container "main"; signal 11`, Container: "main"},
		},
		"a user pattern comes before the defaults": {
			patterns: user,
			end:      failedPod(ctr("main", 137, "OOMKilled", 0)),
			want: Completion{Code: 1137, Phrase: "OOMRetryable", Type: CompletionFailed,
				Diagnostics: `container "main"; reason "OOMKilled"`, Container: "main"},
		},
		"pod and container conditions, any container": {
			patterns: user,
			end: withMessage(failedPod(ctr("ps", 1, "Error", 0), ctr("worker", 9, "Error", 1), ctr("worker", 2, "Error", 2)),
				"lost rendezvous"),
			want: Completion{Code: 2001, Phrase: "RendezvousLost", Type: CompletionFailed, Attributes: []Attribute{T, AttributeConflict},
				Diagnostics: `pod message "lost rendezvous"; container "worker"; exit code 2`, Container: "worker"},
		},
		"pod condition unmet": {
			patterns: user,
			end:      failedPod(ctr("worker", 2, "Error", 0)),
			want: Completion{Code: 2, Phrase: PhraseContainerUnrecognizedFailed, Type: CompletionFailed,
				Diagnostics: `container "worker"; exit code 2; reason "Error"`, Container: "worker"},
		},
		"the contract codes come before user patterns": {
			patterns: user,
			end:      failedPod(ctr("main", 210, "Error", 0)),
			want: Completion{Code: 210, Phrase: "ContainerPermanentFailed", Type: CompletionFailed, Attributes: []Attribute{P},
				Diagnostics: `container "main"; exit code 210`, Container: "main"},
		},
		"a user message pattern": {
			patterns: user,
			end: failedPod(ContainerEnd{Name: "main", ExitCode: 1, Reason: "Error",
				Message: "RuntimeError: CUDA error: an illegal memory access", FinishedAt: t0}),
			want: Completion{Code: 2003, Phrase: "BadGPU", Type: CompletionFailed, Attributes: []Attribute{T},
				Diagnostics: `container "main"; message "RuntimeError: CUDA error: an illegal memory access"`, Container: "main"},
		},
		"a signal reported without an exit code, unmatched": {
			end: failedPod(ContainerEnd{Name: "main", Signal: 10, FinishedAt: t0}),
			want: Completion{Code: 138, Phrase: PhraseContainerUnrecognizedFailed, Type: CompletionFailed,
				Diagnostics: `container "main"; exit code 0; signal 10`, Container: "main"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, errs := NewClassifier(tc.patterns, field.NewPath("patterns"))
			if len(errs) > 0 {
				t.Fatalf("NewClassifier: %v", errs)
			}
			if diff := cmp.Diff(tc.want, c.Classify(tc.end)); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSignalOf(t *testing.T) {
	cases := map[string]struct {
		c    ContainerEnd
		want int32
	}{
		"exit 0":                 {ContainerEnd{}, 0},
		"exit 1":                 {ContainerEnd{ExitCode: 1}, 0},
		"exit 128 is no signal":  {ContainerEnd{ExitCode: 128}, 0},
		"exit 129 is SIGHUP":     {ContainerEnd{ExitCode: 129}, 1},
		"exit 137 is SIGKILL":    {ContainerEnd{ExitCode: 137}, 9},
		"exit 159 is signal 31":  {ContainerEnd{ExitCode: 159}, 31},
		"exit 160 is no signal":  {ContainerEnd{ExitCode: 160}, 0},
		"exit 255 is no signal":  {ContainerEnd{ExitCode: 255}, 0},
		"reported signal wins":   {ContainerEnd{ExitCode: 137, Signal: 15}, 15},
		"reported with no exit":  {ContainerEnd{Signal: 6}, 6},
		"negative is not signal": {ContainerEnd{ExitCode: -1}, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SignalOf(tc.c); got != tc.want {
				t.Errorf("SignalOf(%+v) = %d, want %d", tc.c, got, tc.want)
			}
		})
	}
}

func TestShorten(t *testing.T) {
	long := strings.Repeat("a", maxDiagnosticText+10)
	// A two-byte character straddling the cut must not be split.
	straddle := strings.Repeat("a", maxDiagnosticText-4) + "é" + strings.Repeat("b", 10)
	cases := map[string]struct {
		in, want string
	}{
		"short":             {"short", "short"},
		"exactly the limit": {long[:maxDiagnosticText], long[:maxDiagnosticText]},
		"too long":          {long, long[:maxDiagnosticText-3] + "..."},
		"multi-byte at cut": {straddle, straddle[:maxDiagnosticText-4] + "..."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := shorten(tc.in); got != tc.want {
				t.Errorf("shorten: got %q (%d bytes), want %q", got, len(got), tc.want)
			}
		})
	}
}

func TestPermanentExitCodesFollowTheTablesAndTheUsersPatterns(t *testing.T) {
	var zero Classifier
	got := zero.PermanentExitCodes()
	for _, want := range []int32{126, 127, 132, 139, 210} {
		if !slices.Contains(got, want) {
			t.Errorf("built-in table: %d is missing from %v", want, got)
		}
	}
	for _, not := range []int32{1, 137, 143, 200, 201} {
		if slices.Contains(got, not) {
			t.Errorf("built-in table: %d is not permanent, got %v", not, got)
		}
	}
	// The built-in answer is worked out once: it must be what classifying
	// each code says, and a caller's change to it must not reach the next.
	if want := zero.permanentExitCodes(); !slices.Equal(got, want) {
		t.Errorf("built-in table, remembered: %v, classified now: %v", got, want)
	}
	got[0] = 0
	if again := zero.PermanentExitCodes(); again[0] == 0 {
		t.Errorf("a caller's change to the answer reached the next caller: %v", again)
	}
	c, errs := NewClassifier([]FailurePattern{{
		Code: 42, Phrase: "DatasetMissing", Attributes: []Attribute{AttributePermanent},
		ExitCodes: &Range{Min: 3, Max: 3},
	}}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := c.PermanentExitCodes(); !slices.Contains(got, 3) {
		t.Errorf("a user pattern that makes exit 3 Permanent: got %v", got)
	}
}
