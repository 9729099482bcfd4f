package failure

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func terminated(name string, code int32, reason string, at time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(at),
	}}}
}

// exitSummary is the part of an ExitStatus these tests pin down.
type exitSummary struct {
	Code           int32
	Reason         string
	Container      string
	CompletionCode int32
	Phrase         string
	Attributes     []string
}

func summarize(e musterv1.ExitStatus) exitSummary {
	return exitSummary{e.Code, e.Reason, e.Container, e.CompletionCode, e.Phrase, e.Attributes}
}

func TestExitOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		status corev1.PodStatus
		want   exitSummary
	}{
		"the failed container that finished first is the cause": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				terminated("sidecar", 143, "Error", t0.Add(time.Second)),
				terminated("main", 1, "Error", t0),
			}},
			want: exitSummary{1, "Error", "main", 1, PhraseContainerUnrecognizedFailed, nil},
		},
		"a failed init container counts; 127 is permanent": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{
				terminated("init", 127, "Error", t0),
			}},
			want: exitSummary{127, "Error", "init", CodeContainerCommandNotFound, "ContainerCommandNotFound", []string{"Permanent"}},
		},
		"eviction is transient": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"},
			want:   exitSummary{0, "Evicted", "", CodePodEvicted, "PodEvicted", []string{"Transient"}},
		},
		"OOMKilled is permanent": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				terminated("main", 137, "OOMKilled", t0)}},
			want: exitSummary{137, "OOMKilled", "main", CodeContainerOOMKilled, "ContainerOOMKilled", []string{"Permanent"}},
		},
		"exit 200 says transient": {
			status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				terminated("main", 200, "Error", t0)}},
			want: exitSummary{200, "Error", "main", 200, "ContainerTransientFailed", []string{"Transient"}},
		},
		"success": {
			status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
				terminated("main", 0, "Completed", t0)}},
			want: exitSummary{Phrase: "Succeeded"},
		},
		"failed with no container status": {
			status: corev1.PodStatus{Phase: corev1.PodFailed},
			want:   exitSummary{0, "PodFailed", "", CodePodFailedWithoutFailedContainer, "PodFailedWithoutFailedContainer", nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ExitOf(&corev1.Pod{Status: tc.status}, Classifier{})
			if diff := cmp.Diff(tc.want, summarize(got)); diff != "" {
				t.Errorf("ExitOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUserClassificationRulesComeFirst(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("w", 1).Obj()
	job.Spec.FailurePolicy.Classification = &musterv1.Classification{Rules: []musterv1.ClassificationRule{{
		ContainerMessage: "NCCL timeout", Class: musterv1.ClassTransient, Code: 1001, Phrase: "NCCLTimeout",
	}}}
	c, errs := ClassifierFor(job)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "watchdog: NCCL timeout after 600s"}},
	}}}}
	got := summarize(ExitOf(pod, c))
	want := exitSummary{1, "", "main", 1001, "NCCLTimeout", []string{"Transient"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	job.Spec.FailurePolicy.Classification.Rules[0].ContainerMessage = "(unclosed"
	if _, errs := ClassifierFor(job); len(errs) == 0 {
		t.Error("an invalid regular expression must be rejected")
	}
}

// A crash says why at the end of what it printed: status keeps the end of a
// container's termination message (with FallbackToLogsOnError, the tail of
// its log), not its beginning, which is the middle of the traceback.
func TestExitOfKeepsTheEndOfATerminationMessage(t *testing.T) {
	var tb strings.Builder
	tb.WriteString("Traceback (most recent call last):\n")
	for i := range 20 {
		fmt.Fprintf(&tb, "  File \"/usr/lib/python3/dist-packages/torch/distributed/mod%d.py\", line %d, in f%d\n    f%d()\n", i, 100+i, i, i+1)
	}
	tb.WriteString("AttributeError: 'NoneType' object has no attribute 'get'\n")
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: tb.String()}},
	}}}}
	got := ExitOf(pod, Classifier{}).Message
	if !strings.HasSuffix(got, "\nAttributeError: 'NoneType' object has no attribute 'get'") {
		t.Errorf("the message does not end with the exception:\n%s", got)
	}
	if !strings.HasPrefix(got, "…") || len(got) > MaxMessageLen {
		t.Errorf("the message is not its end, marked, in %d bytes: %d bytes:\n%s", MaxMessageLen, len(got), got)
	}
}

// A reason is whatever wrote the pod's status said, of any length: status
// keeps at most the schema's 128 bytes of it, cut between characters, or
// every status write would be refused.
func TestExitReasonsAreCutToTheSchema(t *testing.T) {
	long := strings.Repeat("Überlastet", 20)
	now := time.Now()
	for name, exit := range map[string]musterv1.ExitStatus{
		"pod": ExitOf(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: long}}, Classifier{}),
		"container": ExitOf(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{terminated("main", 1, long, now)}}}, Classifier{}),
		"disruption": DisruptedExit(&corev1.PodCondition{Type: corev1.DisruptionTarget, Reason: long}, now, Classifier{}),
	} {
		if len(exit.Reason) > MaxReasonLen || !utf8.ValidString(exit.Reason) || !strings.HasPrefix(exit.Reason, "Überlastet") {
			t.Errorf("%s: reason of %d bytes: %q", name, len(exit.Reason), exit.Reason)
		}
	}
}
