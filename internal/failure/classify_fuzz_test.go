package failure

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/internal/testutil"
)

var (
	fuzzPhases      = []corev1.PodPhase{corev1.PodFailed, corev1.PodFailed, corev1.PodSucceeded, corev1.PodRunning, ""}
	fuzzPodReasons  = []string{"", "Evicted", "NodeLost", "OutOfcpu", "Preempting", "DeadlineExceeded", "SysctlForbidden", "UnknownReason", "Shutdown", "Terminated"}
	fuzzCtrReasons  = []string{"", "Error", "OOMKilled", "ContainerCannotRun", "Completed"}
	fuzzExitCodes   = []int32{0, 1, 2, 125, 126, 127, 128, 130, 134, 137, 139, 143, 200, 201, 210, 255, -1}
	fuzzAttributes  = [][]Attribute{nil, {AttributeTransient}, {AttributeConflict, AttributeTransient}, {AttributePermanent}}
	contractCodes   = []int32{CodeContainerTransientFailed, CodeContainerTransientConflictFailed, CodeContainerPermanentFailed}
	validAttributes = [][]Attribute{nil, {AttributeTransient}, {AttributeTransient, AttributeConflict}, {AttributePermanent}}
)

// fuzzPodEnd is an ended pod whose free text is the fuzzer's and whose
// codes, reasons and timing r chooses.
func fuzzPodEnd(r *rand.Rand, reason, message string) PodEnd {
	end := PodEnd{Phase: fuzzPhases[r.IntN(len(fuzzPhases))], Reason: fuzzPodReasons[r.IntN(len(fuzzPodReasons))], Message: message,
		Vanished: r.IntN(10) == 0}
	if r.IntN(3) == 0 {
		end.Reason = reason
	}
	if r.IntN(5) == 0 {
		end.Disruption = &Disruption{Reason: reason, Message: message}
	}
	containers := func() []ContainerEnd {
		out := make([]ContainerEnd, r.IntN(4))
		for i := range out {
			out[i] = ContainerEnd{
				Name:     []string{"main", "sidecar", "init", "main"}[r.IntN(4)],
				ExitCode: fuzzExitCodes[r.IntN(len(fuzzExitCodes))],
				Reason:   fuzzCtrReasons[r.IntN(len(fuzzCtrReasons))],
				Message:  message,
				// Few distinct times, so that ties are common.
				FinishedAt: time.Unix(int64(r.IntN(3)), 0),
			}
			if r.IntN(4) == 0 {
				out[i].Signal = r.Int32N(70)
			}
		}
		return out
	}
	end.InitContainers, end.Containers = containers(), containers()
	return end
}

// FuzzClassify classifies pods with fuzzed text against user patterns
// whose expressions are fuzzed too, and checks what the package promises:
//   - patterns that do not compile are refused, each error naming the
//     pattern's field; a classifier that was built never panics;
//   - Classify is deterministic, modifies neither its input nor its
//     tables (a caller may change the completion it gets);
//   - a vanished pod is PodDeletedExternally and a succeeded one
//     Succeeded, whatever the patterns;
//   - a failed container exiting 200, 201 or 210 decides the code, before
//     any pattern;
//   - a failure's attributes are one of the combinations retries
//     understand, and the container it names is one that failed;
//   - diagnostics quote each text at most maxDiagnosticText bytes long, and
//     valid UTF-8 stays valid.
func FuzzClassify(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "Evicted", "out of memory", "memory", "^main$")
	f.Add([]byte("\x00\x05\x00\x02\x01\x0c\x00\x01\x02"), "Custom", strings.Repeat("é", 300), "(", "")
	f.Add([]byte("\xff\xfe\xfd\x10\x20\x30\x40"), "", "x", "", "a{1000}")
	f.Fuzz(func(t *testing.T, data []byte, reason, message, messageRE, nameRE string) {
		r, _ := testutil.FuzzRand(data)
		patterns := []FailurePattern{
			{PodMessage: messageRE, Code: 1, Phrase: "UserMessage", Attributes: fuzzAttributes[r.IntN(4)]},
			{ContainerName: nameRE, ContainerMessage: messageRE, Code: 2, Phrase: "UserContainer", Attributes: fuzzAttributes[r.IntN(4)]},
		}
		path := field.NewPath("spec", "failurePolicy", "classification", "rules")
		c, errs := NewClassifier(patterns, path)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, path.String()+"[") {
				t.Fatalf("error %q does not name a pattern", e)
			}
		}
		end := fuzzPodEnd(r, reason, message)
		checkClassify(t, c, end)
		checkShorten(t, message)
	})
}

func checkClassify(t *testing.T, c Classifier, end PodEnd) {
	t.Helper()
	before := clonePodEnd(end)
	got := c.Classify(end)
	if !reflect.DeepEqual(before, end) {
		t.Fatalf("Classify modified its input")
	}
	// The caller owns what it gets: changing it must not change the next
	// answer.
	if len(got.Attributes) > 0 {
		saved := slices.Clone(got.Attributes)
		got.Attributes[0] = "Changed"
		again := c.Classify(end)
		got.Attributes = saved
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("Classify is not deterministic, or shares its tables:\n%+v\n%+v", got, again)
		}
	} else if again := c.Classify(end); !reflect.DeepEqual(got, again) {
		t.Fatalf("Classify is not deterministic:\n%+v\n%+v", got, again)
	}
	failed := failedContainers(end)
	switch {
	case end.Vanished:
		if got.Code != CodePodDeletedExternally {
			t.Fatalf("a vanished pod got %d %s", got.Code, got.Phrase)
		}
		return
	case end.Phase == corev1.PodSucceeded:
		if got.Code != CodeSucceeded || got.Type != CompletionSucceeded {
			t.Fatalf("a succeeded pod got %d %s", got.Code, got.Phrase)
		}
		return
	case slices.ContainsFunc(failed, func(ce ContainerEnd) bool { return slices.Contains(contractCodes, ce.ExitCode) }):
		if !slices.Contains(contractCodes, got.Code) {
			t.Fatalf("a container exited with a contract code, but the pod got %d %s", got.Code, got.Phrase)
		}
	}
	if got.Type != CompletionFailed {
		t.Fatalf("a pod that did not succeed got type %s", got.Type)
	}
	if !slices.ContainsFunc(validAttributes, func(a []Attribute) bool { return slices.Equal(a, got.Attributes) }) {
		t.Fatalf("attributes %v are no combination retries understand", got.Attributes)
	}
	if got.Container != "" && !slices.ContainsFunc(failed, func(ce ContainerEnd) bool { return ce.Name == got.Container }) {
		t.Fatalf("names container %q, which did not fail", got.Container)
	}
	checkDiagnostics(t, end, got.Diagnostics)
}

// checkDiagnostics checks that no text is quoted whole when it is longer
// than maxDiagnosticText.
func checkDiagnostics(t *testing.T, end PodEnd, diag string) {
	t.Helper()
	texts := []string{end.Reason, end.Message}
	for _, ce := range append(slices.Clone(end.InitContainers), end.Containers...) {
		texts = append(texts, ce.Reason, ce.Message)
	}
	for _, s := range texts {
		if len(s) > maxDiagnosticText && len(s) > 8 && strings.Contains(diag, s) {
			t.Fatalf("diagnostics quote a %d-byte text whole", len(s))
		}
	}
}

// checkShorten checks that shorten cuts s to a prefix of at most
// maxDiagnosticText bytes that splits no character.
func checkShorten(t *testing.T, s string) {
	t.Helper()
	got := shorten(s)
	if len(got) > maxDiagnosticText {
		t.Fatalf("shorten left %d bytes", len(got))
	}
	if !strings.HasPrefix(s, strings.TrimSuffix(got, "...")) {
		t.Fatalf("shorten(%q) = %q, not a prefix", s, got)
	}
	if utf8.ValidString(s) && !utf8.ValidString(got) {
		t.Fatalf("shorten split a character: %q", got)
	}
}

func clonePodEnd(e PodEnd) PodEnd {
	e.InitContainers = slices.Clone(e.InitContainers)
	e.Containers = slices.Clone(e.Containers)
	if e.Disruption != nil {
		d := *e.Disruption
		e.Disruption = &d
	}
	return e
}
