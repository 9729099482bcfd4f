package provider

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/cgroup"
)

// defaultCapabilities are what a container runtime grants a container that
// asks for nothing more (containerd's and Docker's default set): enough for
// an sshd or a package manager, not for mounting, tracing or loading
// modules. MKNOD is left out: a runtime's device cgroup keeps a container
// from opening the device nodes it makes, and no such cgroup bounds a pod
// here, so a node made in /dev would be the host's disk. A container that
// adds it gets it.
var defaultCapabilities = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
}

// capabilityNumbers are the capabilities by name, as securityContext
// spells them (without the CAP_ prefix).
var capabilityNumbers = map[string]int{
	"CHOWN": unix.CAP_CHOWN, "DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"FOWNER": unix.CAP_FOWNER, "FSETID": unix.CAP_FSETID, "KILL": unix.CAP_KILL, "SETGID": unix.CAP_SETGID,
	"SETUID": unix.CAP_SETUID, "SETPCAP": unix.CAP_SETPCAP, "LINUX_IMMUTABLE": unix.CAP_LINUX_IMMUTABLE,
	"NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "NET_BROADCAST": unix.CAP_NET_BROADCAST,
	"NET_ADMIN": unix.CAP_NET_ADMIN, "NET_RAW": unix.CAP_NET_RAW, "IPC_LOCK": unix.CAP_IPC_LOCK,
	"IPC_OWNER": unix.CAP_IPC_OWNER, "SYS_MODULE": unix.CAP_SYS_MODULE, "SYS_RAWIO": unix.CAP_SYS_RAWIO,
	"SYS_CHROOT": unix.CAP_SYS_CHROOT, "SYS_PTRACE": unix.CAP_SYS_PTRACE, "SYS_PACCT": unix.CAP_SYS_PACCT,
	"SYS_ADMIN": unix.CAP_SYS_ADMIN, "SYS_BOOT": unix.CAP_SYS_BOOT, "SYS_NICE": unix.CAP_SYS_NICE,
	"SYS_RESOURCE": unix.CAP_SYS_RESOURCE, "SYS_TIME": unix.CAP_SYS_TIME, "SYS_TTY_CONFIG": unix.CAP_SYS_TTY_CONFIG,
	"MKNOD": unix.CAP_MKNOD, "LEASE": unix.CAP_LEASE, "AUDIT_WRITE": unix.CAP_AUDIT_WRITE,
	"AUDIT_CONTROL": unix.CAP_AUDIT_CONTROL, "SETFCAP": unix.CAP_SETFCAP, "MAC_OVERRIDE": unix.CAP_MAC_OVERRIDE,
	"MAC_ADMIN": unix.CAP_MAC_ADMIN, "SYSLOG": unix.CAP_SYSLOG, "WAKE_ALARM": unix.CAP_WAKE_ALARM,
	"BLOCK_SUSPEND": unix.CAP_BLOCK_SUSPEND, "AUDIT_READ": unix.CAP_AUDIT_READ, "PERFMON": unix.CAP_PERFMON,
	"BPF": unix.CAP_BPF, "CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
}

// capabilities is what a container keeps: everything when privileged,
// else the default set with securityContext's add and drop applied (ALL
// in either, as the kubelet reads it).
func capabilities(c *corev1.Container) (keep []int, all bool) {
	sc := c.SecurityContext
	if sc != nil && sc.Privileged != nil && *sc.Privileged {
		return nil, true
	}
	set := map[string]bool{}
	for _, n := range defaultCapabilities {
		set[n] = true
	}
	if sc != nil && sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			if n := capName(d); n == "ALL" {
				clear(set)
			} else {
				delete(set, n)
			}
		}
		for _, a := range sc.Capabilities.Add {
			if n := capName(a); n == "ALL" {
				return nil, true
			} else if _, known := capabilityNumbers[n]; known {
				set[n] = true
			}
		}
	}
	for n := range set {
		keep = append(keep, capabilityNumbers[n])
	}
	return keep, false
}

func capName(c corev1.Capability) string {
	return strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_")
}

// containerCgroup makes the cgroup of one attempt of a container.
func (r *podRun) containerCgroup(pod *corev1.Pod, spec *corev1.Container, index int32) (*cgroup.Group, error) {
	if r.p.cfg.Cgroups == nil {
		return &cgroup.Group{}, nil
	}
	g, err := r.p.cfg.Cgroups.Create(fmt.Sprintf("%s/%s-%d", pod.UID, spec.Name, index), cgroup.LimitsFor(spec))
	if err != nil {
		return nil, fmt.Errorf("making the container's cgroup: %w", err)
	}
	return g, nil
}

// releaseCgroup kills what is left in an attempt's cgroup and removes it,
// waiting briefly for the kernel to let go of the killed processes.
func releaseCgroup(g *cgroup.Group) {
	if g == nil {
		return
	}
	for i := 0; i < 20; i++ {
		g.Kill()
		if g.Remove() == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
