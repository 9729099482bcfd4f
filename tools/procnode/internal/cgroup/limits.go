// Package cgroup puts each container attempt of the process node in a
// control group of its own, limited as its resources say, so that a runaway
// test pod cannot starve the control plane that shares the machine. It
// drives cgroup v2 when the host has it and the cpu and memory controllers
// of cgroup v1 otherwise; a host with neither runs containers unlimited.
package cgroup

import (
	corev1 "k8s.io/api/core/v1"
)

// cfsPeriod is the CPU accounting period, the kubelet's.
const cfsPeriod = 100_000 // µs

// Limits are what a container's resources ask of its cgroup.
type Limits struct {
	// CPUQuota is the CPU time (µs) allowed per cfsPeriod; 0 for none.
	CPUQuota int64
	// CPUShares is the relative CPU weight in v1 terms (1024 per CPU
	// requested, at least 2), as the kubelet sets it.
	CPUShares uint64
	// Memory is the memory limit in bytes; 0 for none.
	Memory int64
}

// LimitsFor is what the kubelet would give the container: a CPU quota from
// limits.cpu, a weight from requests.cpu (else limits.cpu), a memory limit
// from limits.memory.
func LimitsFor(c *corev1.Container) Limits {
	var l Limits
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && !q.IsZero() {
		l.CPUQuota = max(q.MilliValue()*cfsPeriod/1000, 1000)
	}
	req, ok := c.Resources.Requests[corev1.ResourceCPU]
	if !ok {
		req, ok = c.Resources.Limits[corev1.ResourceCPU]
	}
	l.CPUShares = 2
	if ok {
		l.CPUShares = max(uint64(req.MilliValue())*1024/1000, 2)
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && !q.IsZero() {
		l.Memory = q.Value()
	}
	return l
}

// weight converts v1 shares to a v2 cpu.weight (1..10000), as runc does.
func weight(shares uint64) uint64 {
	if shares == 0 {
		return 100
	}
	return 1 + ((shares-2)*9999)/262142
}
