package main

import (
	"runtime"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-helpers/nodedeclaredfeatures"
)

// The node advertises what the host has, since its pods run on the host.
func TestHostCapacity(t *testing.T) {
	c := hostCapacity()
	if cpu := c[corev1.ResourceCPU]; cpu.Value() != int64(runtime.NumCPU()) {
		t.Errorf("cpu %s, want %d", cpu.String(), runtime.NumCPU())
	}
	if mem := c[corev1.ResourceMemory]; mem.Value() < 1<<30 {
		t.Errorf("memory %s: the host's, at least 1 GiB", mem.String())
	}
}

func TestRegistryMirrorFlag(t *testing.T) {
	o, err := parseFlags([]string{"--registry-mirror", "127.0.0.1:5001"})
	if err != nil || o.registryMirror != "127.0.0.1:5001" {
		t.Fatalf("%+v, %v", o, err)
	}
	if o, err := parseFlags(nil); err != nil || o.registryMirror != "" {
		t.Fatalf("default: %+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"--registry-mirror", "http://127.0.0.1"}); err == nil {
		t.Error("a mirror that is not HOST:PORT must be refused")
	}
	if _, err := parseFlags([]string{"--image-map", "x=/y"}); err == nil {
		t.Error("--image-map is gone")
	}
}

// The Node declares RestartAllContainersOnContainerExits, so the
// scheduler's NodeDeclaredFeatures filter places a pod with a
// RestartAllContainers rule on it.
func TestNodeDeclaresRestartAllContainers(t *testing.T) {
	nd := &corev1.Node{}
	nd.Labels = map[string]string{}
	describeNode(nd, &options{capacity: hostCapacity()}, 10250)
	if !slices.Contains(nd.Status.DeclaredFeatures, "RestartAllContainersOnContainerExits") {
		t.Fatalf("declaredFeatures %q", nd.Status.DeclaredFeatures)
	}
	never := corev1.ContainerRestartPolicyNever
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", RestartPolicy: &never,
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}
	fw := nodedeclaredfeatures.DefaultFramework
	need, err := fw.InferForPodScheduling(&nodedeclaredfeatures.PodInfo{Spec: spec}, version.MustParse(kubeletVersion))
	if err != nil || need.IsEmpty() {
		t.Fatalf("the pod needs no feature? %v", err)
	}
	if m, err := fw.MatchNode(need, nd); err != nil || !m.IsMatch {
		t.Fatalf("the scheduler would not place the pod: %+v, %v", m, err)
	}
}
