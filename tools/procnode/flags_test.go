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
