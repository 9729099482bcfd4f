package shim

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropCapabilities removes from the bounding set every capability the
// container is not to keep. The command is exec'd as root with no file
// capabilities, so what it gets is exactly the bounding set that is left;
// nothing it starts can get more back.
func dropCapabilities(s *Spec) error {
	if s.AllCapabilities {
		return nil
	}
	for c := 0; c <= lastCap(); c++ {
		if slices.Contains(s.KeepCapabilities, c) {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return err
		}
	}
	// exec also hands on the inheritable set: limit it the same way.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	var keep [2]uint32
	for _, c := range s.KeepCapabilities {
		keep[c/32] |= 1 << (c % 32)
	}
	for i := range data {
		data[i].Inheritable &= keep[i]
	}
	return unix.Capset(&hdr, &data[0])
}

// lastCap is the highest capability the running kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	return n
}
