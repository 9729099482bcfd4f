package objects

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// substitute is the specification of placeholder substitution in one
// string, written independently of ApplyPlaceholders: left to right, each
// known placeholder becomes its value, everything else stays as written.
// No known placeholder is a prefix of another, so the first one that
// starts at a position is the only one.
func substitute(s string, p Placeholders) string {
	known := map[string]string{
		"{{MUSTER_JOB_NAMESPACE}}": p.JobNamespace, "{{MUSTER_JOB_NAME}}": p.JobName, "{{MUSTER_JOB_UID}}": p.JobUID,
		"{{MUSTER_ROLE_NAME}}": p.Role, "{{MUSTER_TASK_INDEX}}": fmt.Sprint(p.TaskIndex),
		"{{MUSTER_ATTEMPT_ID}}": fmt.Sprint(p.JobAttempt), "{{MUSTER_TASK_ATTEMPT}}": fmt.Sprint(p.TaskAttempt),
		"{{MUSTER_POD_NAME}}": p.PodName,
	}
	var b strings.Builder
outer:
	for i := 0; i < len(s); {
		for token, value := range known {
			if strings.HasPrefix(s[i:], token) {
				b.WriteString(value)
				i += len(token)
				continue outer
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// fuzzTemplate puts text wherever a template holds user strings: a label
// value, an annotation key, the image, a command, an env value and a
// volume path; plus fields that survive only a faithful copy (a quantity,
// a security context).
func fuzzTemplate(text string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": text}, Annotations: map[string]string{"note/" + text: "v"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: text, Command: []string{"sh", "-c", text},
				Env: []corev1.EnvVar{{Name: "X", Value: text}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("1500Mi"), corev1.ResourceCPU: resource.MustParse("500m")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data/" + text}},
			}},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: new(int64(1000))},
		},
	}
}

// FuzzApplyPlaceholders checks ApplyPlaceholders against substitute for
// any text and any values (Kubernetes validates the names the values come
// from, but the function must not depend on it for correctness):
//   - every field holding text holds substitute(text), so unknown
//     placeholders and all other text are left as written, and the output
//     grows only by the values;
//   - a template without a placeholder comes back equal;
//   - the template given is not modified;
//   - when no value holds a placeholder, applying twice gives what
//     applying once does.
func FuzzApplyPlaceholders(f *testing.F) {
	f.Add("{{MUSTER_JOB_NAME}}-{{MUSTER_TASK_INDEX}}", "job", "worker", "uid-1", int32(3))
	f.Add("{{OTHER}} {{MUSTER_UNKNOWN}} {{MUSTER_ROLE_NAME}}", "j", "r", "u", int32(0))
	f.Add("{{{MUSTER_POD_NAME}}}{{MUSTER_JOB_NAMESPACE}}{{MUSTER_", "a", "b", "c", int32(-1))
	f.Add(`"{{MUSTER_JOB_UID}}\n<&>`, `quote"d`, `back\slash`, "\u2028", int32(10000))
	f.Add("plain text", "job", "role", "uid", int32(1))
	f.Fuzz(func(t *testing.T, text, name, role, uid string, index int32) {
		// Objects read from the API server are valid UTF-8; encoding/json
		// would replace anything else. Each string is checked on its own:
		// two invalid halves can join into a valid whole.
		for _, s := range []string{text, name, role, uid} {
			if !utf8.ValidString(s) {
				return
			}
		}
		p := Placeholders{JobNamespace: "ns-" + name, JobName: name, JobUID: uid, Role: role, PodName: name + "-" + role,
			TaskIndex: index, JobAttempt: index / 2, TaskAttempt: -index}
		tmpl := fuzzTemplate(text)
		orig := tmpl.DeepCopy()
		got, err := ApplyPlaceholders(tmpl, p)
		if err != nil {
			t.Fatalf("ApplyPlaceholders: %v", err)
		}
		if !equality.Semantic.DeepEqual(orig, tmpl) {
			t.Fatal("the template given was modified")
		}
		want := substitute(text, p)
		if !equality.Semantic.DeepEqual(fuzzTemplate(want), got) {
			t.Fatalf("text %q with %+v:\n got %+v\nwant text %q everywhere", text, p, got, want)
		}
		if !strings.Contains(name+role+uid, "{{MUSTER_") {
			again, err := ApplyPlaceholders(got, p)
			if err != nil || !equality.Semantic.DeepEqual(got, again) {
				t.Fatalf("applying twice changed the template (%v):\n%+v\n%+v", err, got, again)
			}
		}
	})
}
