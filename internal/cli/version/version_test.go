package version

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	buildversion "github.com/muster-dev/muster/internal/version"
)

func operatorPod(name, version, image, imageID string, phase corev1.PodPhase) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: image}}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "operator", ImageID: imageID},
		}},
	}
	if version != "" {
		p.Annotations[versionAnnotation] = version
		p.Annotations[commitAnnotation] = "0123456789abcdef0123"
	}
	return p
}

func TestOperatorsGroupsPodsByBuild(t *testing.T) {
	img := "ghcr.io/muster-dev/muster-operator:v0.2.0@sha256:aa"
	got := Operators([]corev1.Pod{
		operatorPod("op-b", "v0.2.0", img, "ghcr.io/muster-dev/muster-operator@sha256:aa", corev1.PodRunning),
		operatorPod("op-a", "v0.2.0", img, "ghcr.io/muster-dev/muster-operator@sha256:aa", corev1.PodRunning),
		// Not running: not an operator that answers.
		operatorPod("op-c", "v0.1.0", "x:v0.1.0", "", corev1.PodPending),
		// An older operator that records nothing: known by its tag.
		operatorPod("op-d", "", "ghcr.io/muster-dev/muster-operator:v0.1.0", "", corev1.PodRunning),
	})
	if len(got) != 2 {
		t.Fatalf("got %d builds, want 2: %+v", len(got), got)
	}
	if got[0].Version != "v0.2.0" || strings.Join(got[0].Pods, ",") != "op-a,op-b" || got[0].ImageID == "" {
		t.Errorf("first build %+v", got[0])
	}
	if got[1].Version != "v0.1.0" || got[1].Pods[0] != "op-d" {
		t.Errorf("the build without annotations: %+v, want v0.1.0 from its tag", got[1])
	}
	if w := Warnings(Info{Client: buildversion.Info{Version: "v0.2.3"}, Operator: got}); len(w) != 2 || !strings.Contains(w[0], "v0.1.0") || !strings.Contains(w[1], "2 different builds") {
		t.Errorf("warnings %q, want one for the v0.1.0 operator's minor release and one about two builds", w)
	}
}

func TestWarningsOnMinorSkew(t *testing.T) {
	for _, tc := range []struct {
		client, operator string
		warn             bool
	}{
		{"v0.2.0", "v0.2.5", false},
		{"v0.2.0", "v0.3.0", true},
		{"v1.2.0", "v0.2.0", true},
		{"(devel)", "v0.3.0", false},
		{"v0.3.0", "", false},
	} {
		w := Warnings(Info{Client: buildversion.Info{Version: tc.client}, Operator: []OperatorInfo{{Version: tc.operator, Pods: []string{"p"}}}})
		if got := len(w) == 1; got != tc.warn {
			t.Errorf("client %s, operator %s: warnings %q, want a warning: %v", tc.client, tc.operator, w, tc.warn)
		}
	}
}

func TestTagOf(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io/muster-dev/muster-operator:v0.2.0":             "v0.2.0",
		"ghcr.io/muster-dev/muster-operator:v0.2.0@sha256:abcd": "v0.2.0",
		"127.0.0.1:5000/muster-operator@sha256:abcd":            "",
		"127.0.0.1:5000/muster-operator":                        "",
		"muster-operator":                                       "",
	} {
		if got := tagOf(in); got != want {
			t.Errorf("tagOf(%q) = %q, want %q", in, got, want)
		}
	}
}
