package provider

import (
	"context"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

func TestCapabilities(t *testing.T) {
	ctr := func(sc *corev1.SecurityContext) *corev1.Container { return &corev1.Container{SecurityContext: sc} }
	caps := func(add, drop []corev1.Capability) *corev1.SecurityContext {
		return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: add, Drop: drop}}
	}
	cases := map[string]struct {
		c        *corev1.Container
		all      bool
		has, not []int
	}{
		"the runtime default": {c: ctr(nil), has: []int{unix.CAP_CHOWN, unix.CAP_SETUID, unix.CAP_KILL}, not: []int{unix.CAP_SYS_ADMIN, unix.CAP_SYS_PTRACE, unix.CAP_NET_ADMIN}},
		// No device cgroup bounds what a process node's pod opens: a
		// device node it made would be the host's device.
		"no mknod by default":  {c: ctr(nil), not: []int{unix.CAP_MKNOD}},
		"mknod when added":     {c: ctr(caps([]corev1.Capability{"MKNOD"}, nil)), has: []int{unix.CAP_MKNOD, unix.CAP_CHOWN}},
		"privileged keeps all": {c: ctr(&corev1.SecurityContext{Privileged: new(true)}), all: true},
		"added, CAP_ prefix or not": {c: ctr(caps([]corev1.Capability{"SYS_PTRACE", "CAP_NET_ADMIN"}, nil)),
			has: []int{unix.CAP_SYS_PTRACE, unix.CAP_NET_ADMIN, unix.CAP_CHOWN}},
		"drop ALL, add one": {c: ctr(caps([]corev1.Capability{"NET_BIND_SERVICE"}, []corev1.Capability{"ALL"})),
			has: []int{unix.CAP_NET_BIND_SERVICE}, not: []int{unix.CAP_CHOWN, unix.CAP_SETUID}},
		"drop one": {c: ctr(caps(nil, []corev1.Capability{"NET_RAW"})), has: []int{unix.CAP_CHOWN}, not: []int{unix.CAP_NET_RAW}},
		"add ALL":  {c: ctr(caps([]corev1.Capability{"ALL"}, nil)), all: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			keep, all := capabilities(tc.c)
			if all != tc.all {
				t.Fatalf("all = %v", all)
			}
			for _, c := range tc.has {
				if !slices.Contains(keep, c) {
					t.Errorf("capability %d dropped; kept %v", c, keep)
				}
			}
			for _, c := range tc.not {
				if slices.Contains(keep, c) {
					t.Errorf("capability %d kept", c)
				}
			}
		})
	}
}

// Deleting a pod that already ended and left the node is done, not an
// error: virtual-kubelet would report an error as a Warning event.
func TestDeleteOfAPodNoLongerHereIsDone(t *testing.T) {
	p := New(Config{})
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.UID = "ns", "gone", "u1"
	if err := p.DeletePod(context.Background(), pod); err != nil {
		t.Errorf("DeletePod of a pod not on the node: %v", err)
	}
}
