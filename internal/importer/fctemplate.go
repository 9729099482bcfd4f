package importer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// fcNames maps FrameworkController's placeholders and variables to
// Muster's. The others (the ConfigMap, the UIDs of task roles, tasks and
// instances, FC_TASK_ATTEMPT_ID, which counts from 0 where Muster's
// MUSTER_TASK_ATTEMPT counts from 1) have no equivalent.
var fcNames = map[string]string{
	"FC_FRAMEWORK_NAMESPACE":  "MUSTER_JOB_NAMESPACE",
	"FC_FRAMEWORK_NAME":       "MUSTER_JOB_NAME",
	"FC_FRAMEWORK_UID":        "MUSTER_JOB_UID",
	"FC_FRAMEWORK_ATTEMPT_ID": "MUSTER_ATTEMPT_ID",
	"FC_TASKROLE_NAME":        "MUSTER_ROLE_NAME",
	"FC_TASK_INDEX":           "MUSTER_TASK_INDEX",
	"FC_POD_NAME":             "MUSTER_POD_NAME",
	"FC_POD_UID":              "MUSTER_POD_UID",
}

// musterPlaceholders are the variables Muster also substitutes as
// {{NAME}} in a pod template.
var musterPlaceholders = map[string]bool{"MUSTER_JOB_NAMESPACE": true, "MUSTER_JOB_NAME": true, "MUSTER_JOB_UID": true,
	"MUSTER_ROLE_NAME": true, "MUSTER_TASK_INDEX": true, "MUSTER_ATTEMPT_ID": true, "MUSTER_POD_NAME": true}

var (
	fcPlaceholder = regexp.MustCompile(`\{\{(FC_[A-Z0-9_]+)\}\}`)
	fcVariable    = regexp.MustCompile(`\bFC_[A-Z0-9_]+\b`)
)

// fcLabels are the labels FrameworkController puts on every pod, which
// Services written for a Framework select: the pods keep them, with the
// values Muster substitutes.
var fcLabels = map[string]string{
	"FC_FRAMEWORK_NAME": "{{MUSTER_JOB_NAME}}",
	"FC_TASKROLE_NAME":  "{{MUSTER_ROLE_NAME}}",
	"FC_TASK_INDEX":     "{{MUSTER_TASK_INDEX}}",
}

// fcTemplate decodes a task's pod template with FrameworkController's
// placeholders replaced by Muster's, its variables defined from Muster's
// in every container that uses them, and its labels. A hostname and
// subdomain written with placeholders for a Service of the user's keep
// naming the pod as they did.
func fcTemplate(s *source, p path) (corev1.PodTemplateSpec, error) {
	v, _ := s.get(p)
	raw, err := json.Marshal(v)
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("%s: %w", p, err)
	}
	text, unknown := fcReplace(string(raw))
	for _, name := range unknown {
		s.dropped = append(s.dropped, Dropped{Path: p.String(), Reason: fmt.Sprintf(
			"uses FrameworkController's %s, which has no Muster equivalent: it is left as written", name)})
	}
	var obj any
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("%s: %w", p, err)
	}
	sub := newSource(map[string]any{"pod": obj})
	t, err := template(sub, path{"pod"})
	if err != nil {
		return t, fmt.Errorf("%s: %w", p, err)
	}
	s.use(p)
	for k, v := range fcLabels {
		if _, ok := t.Labels[k]; !ok {
			t.Labels = setKey(t.Labels, k, v)
		}
	}
	fcDefineVariables(&t, fcVariable.FindAllString(text, -1))
	return t, nil
}

// fcReplace swaps the placeholders that have a Muster equivalent and lists
// the names that have none.
func fcReplace(text string) (string, []string) {
	unknownSet := map[string]bool{}
	text = fcPlaceholder.ReplaceAllStringFunc(text, func(m string) string {
		name := fcPlaceholder.FindStringSubmatch(m)[1]
		if to, ok := fcNames[name]; ok && musterPlaceholders[to] {
			return "{{" + to + "}}"
		}
		unknownSet[name] = true
		return m
	})
	for _, name := range fcVariable.FindAllString(text, -1) {
		if _, ok := fcNames[name]; !ok {
			unknownSet[name] = true
		}
	}
	unknown := make([]string, 0, len(unknownSet))
	for n := range unknownSet {
		unknown = append(unknown, n)
	}
	sort.Strings(unknown)
	return text, unknown
}

// fcDefineVariables puts FC_X=$(MUSTER_Y) first in every container's
// environment, for the variables the template refers to: the program and
// its command line read them as under FrameworkController.
func fcDefineVariables(t *corev1.PodTemplateSpec, used []string) {
	var names []string
	seen := map[string]bool{}
	for _, n := range used {
		if _, ok := fcNames[n]; ok && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	var env []corev1.EnvVar
	for _, n := range names {
		env = append(env, corev1.EnvVar{Name: n, Value: "$(" + fcNames[n] + ")"})
	}
	define := func(cs []corev1.Container) {
		for i := range cs {
			cs[i].Env = append(append([]corev1.EnvVar{}, env...), cs[i].Env...)
		}
	}
	define(t.Spec.InitContainers)
	define(t.Spec.Containers)
}
