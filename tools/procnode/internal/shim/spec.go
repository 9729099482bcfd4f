// Package shim is the first code a container process runs. The node starts
// its own binary as "muster-procnode shim --spec FILE" in fresh mount and UTS
// namespaces (Go cannot run code between fork and exec); the shim joins the
// pod's network namespace, mounts the container's volumes, sets the hostname
// and working directory, and then execs the real command in place.
package shim

import (
	"encoding/json"
	"os"
)

// Mount is a bind mount made inside the container's mount namespace.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
	// Optional mounts are skipped when the target cannot be prepared.
	Optional bool `json:"optional,omitempty"`
	// tree is a detached copy of Source (open_tree), when set.
	tree int
}

// Spec is what the node passes to the shim, as a JSON file.
type Spec struct {
	NetNS      string   `json:"netns,omitempty"`    // network namespace file; "" keeps the host's
	Hostname   string   `json:"hostname,omitempty"` // set when the UTS namespace is private
	Mounts     []Mount  `json:"mounts,omitempty"`
	WorkingDir string   `json:"workingDir,omitempty"`
	Argv       []string `json:"argv"`
	Env        []string `json:"env"`
	UID        *int64   `json:"uid,omitempty"`
	GID        *int64   `json:"gid,omitempty"`
	// Groups are the supplementary groups (with GID set; none otherwise).
	Groups []int64 `json:"groups,omitempty"`
	// Rootfs, if set, is the image's unpacked root filesystem, the node's
	// shared cache entry: the container runs in an overlay of it, with
	// the upper and work directories in RootfsRW (its own writable layer,
	// empty at every attempt), pivoted to as "/". Empty runs the container
	// in the host's root.
	Rootfs   string `json:"rootfs,omitempty"`
	RootfsRW string `json:"rootfsRW,omitempty"`
	// ReadOnlyRootfs makes "/" read-only (readOnlyRootFilesystem) once the
	// mount points are made; volumes and /tmp keep their own modes.
	ReadOnlyRootfs bool `json:"readOnlyRootfs,omitempty"`
	// ScratchDir holds the tmpfs mounts used to create mount points (in
	// the host's root) or the mount point of the new root (in an image's).
	ScratchDir string `json:"scratchDir"`
	// TmpDir, if set, is mounted at /tmp so containers do not share the
	// host's /tmp (as they would not share it on a real node).
	TmpDir string `json:"tmpDir,omitempty"`
	// ErrorFile receives the reason when the container cannot be started.
	ErrorFile string `json:"errorFile"`
	// Cgroups are the folders of the attempt's cgroup; the shim joins them
	// before anything else, so the command and all it starts are inside.
	Cgroups []string `json:"cgroups,omitempty"`
	// KeepCapabilities are the capabilities (numbers) the command keeps;
	// every other one leaves the bounding set before exec. Nil keeps all
	// (a privileged container).
	KeepCapabilities []int `json:"keepCapabilities,omitempty"`
	// AllCapabilities keeps every capability: a privileged container.
	AllCapabilities bool `json:"allCapabilities,omitempty"`
}

// Exit codes of a container that could not be started, following the shell:
// 127 for a command that does not exist, 126 for one that cannot be run.
const (
	ExitNotFound      = 127
	ExitNotExecutable = 126
	ExitSetupFailed   = 128
)

// WriteSpec stores a spec readable only by root: it holds the environment,
// which may contain secrets. The shim deletes it once read.
func WriteSpec(path string, s *Spec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func readSpec(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	var s Spec
	return &s, json.Unmarshal(b, &s)
}
