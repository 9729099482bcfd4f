package main

import (
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
