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

func (p Placeholders) replacer() *strings.Replacer {
	return strings.NewReplacer(
		"{{MUSTER_JOB_NAMESPACE}}", p.JobNamespace,
		"{{MUSTER_JOB_NAME}}", p.JobName,
		"{{MUSTER_JOB_UID}}", p.JobUID,
		"{{MUSTER_ROLE_NAME}}", p.Role,
		"{{MUSTER_TASK_INDEX}}", fmt.Sprint(p.TaskIndex),
		"{{MUSTER_ATTEMPT_ID}}", fmt.Sprint(p.JobAttempt),
		"{{MUSTER_TASK_ATTEMPT}}", fmt.Sprint(p.TaskAttempt),
		"{{MUSTER_POD_NAME}}", p.PodName,
	)
}

// ApplyPlaceholders returns a copy of tmpl with every known placeholder
// replaced. The values are DNS names, UIDs and numbers, so they never need
// JSON escaping.
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
