package objects

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Placeholders are the {{NAME}} strings replaced anywhere in a role's pod
// template when a pod is made from it. Unknown placeholders are left as they
// are, so a template can carry other {{...}} text untouched.
type Placeholders struct {
	JobNamespace, JobName, JobUID, Role, PodName string
	TaskIndex, JobAttempt, TaskAttempt           int32
}

// replacer replaces placeholders in the JSON encoding of a template, so
// each value is JSON-escaped: the names come from a validated job, but a
// job that reached the cluster without the CRD's rules could carry a quote
// or a backslash, which would otherwise end the string it lands in or
// turn into another character.
func (p Placeholders) replacer() *strings.Replacer {
	return strings.NewReplacer(
		"{{MUSTER_JOB_NAMESPACE}}", jsonText(p.JobNamespace),
		"{{MUSTER_JOB_NAME}}", jsonText(p.JobName),
		"{{MUSTER_JOB_UID}}", jsonText(p.JobUID),
		"{{MUSTER_ROLE_NAME}}", jsonText(p.Role),
		"{{MUSTER_TASK_INDEX}}", fmt.Sprint(p.TaskIndex),
		"{{MUSTER_ATTEMPT_ID}}", fmt.Sprint(p.JobAttempt),
		"{{MUSTER_TASK_ATTEMPT}}", fmt.Sprint(p.TaskAttempt),
		"{{MUSTER_POD_NAME}}", jsonText(p.PodName),
	)
}

// jsonText is s as it is written inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b[1 : len(b)-1])
}

// ApplyPlaceholders returns a copy of tmpl with every known placeholder
// replaced by its value, as written.
func ApplyPlaceholders(tmpl *corev1.PodTemplateSpec, p Placeholders) (*corev1.PodTemplateSpec, error) {
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, fmt.Errorf("encoding pod template: %w", err)
	}
	s := string(raw)
	if !strings.Contains(s, "{{MUSTER_") {
		return tmpl.DeepCopy(), nil
	}
	out := &corev1.PodTemplateSpec{}
	if err := json.Unmarshal([]byte(p.replacer().Replace(s)), out); err != nil {
		return nil, fmt.Errorf("decoding pod template after placeholders: %w", err)
	}
	return out, nil
}

// UsesAttemptPlaceholders is whether tmpl names the job's or the task's
// attempt in a placeholder: such a pod holds the attempt it was made for
// in its spec, which no restart in place can change.
func UsesAttemptPlaceholders(tmpl *corev1.PodTemplateSpec) bool {
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return true
	}
	return strings.Contains(string(raw), "{{MUSTER_ATTEMPT_ID}}") || strings.Contains(string(raw), "{{MUSTER_TASK_ATTEMPT}}")
}
