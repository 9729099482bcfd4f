// Package volume decides where each pod volume lives on the host and which
// bind mounts every container needs, and renders API-backed volumes
// (configMap, secret, downwardAPI, projected) into files.
package volume

import (
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kind says how a volume's host directory is produced.
type Kind string

const (
	KindEmptyDir Kind = "emptyDir"
	KindHostPath Kind = "hostPath"
	KindClaim    Kind = "persistentVolumeClaim"
	// KindFiles covers configMap, secret, downwardAPI and projected volumes,
	// whose content the node writes from API objects.
	KindFiles Kind = "files"
)

// Volume is one pod volume and the host path that backs it.
type Volume struct {
	Name     string
	Kind     Kind
	HostPath string
	// ReadOnly is forced for API-backed volumes, as the kubelet does.
	ReadOnly bool
	// Claim is namespace/name for claim-backed volumes.
	Claim string
	// HostPathType is the requested hostPath type, for creation checks.
	HostPathType corev1.HostPathType
}

// Mount is one bind mount inside a container's mount namespace.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// ClaimDir is the host folder that backs a claim. Every pod that mounts the
// claim shares it, which makes claims behave like ReadWriteMany.
func ClaimDir(stateDir, namespace, claim string) string {
	return filepath.Join(stateDir, "pvc", namespace, claim)
}

// Plan maps every volume of the pod to a host path. podDir is the pod's
// private directory under the state dir.
func Plan(pod *corev1.Pod, podDir, stateDir string) (map[string]Volume, error) {
	out := map[string]Volume{}
	for _, v := range pod.Spec.Volumes {
		vol := Volume{Name: v.Name, HostPath: filepath.Join(podDir, "volumes", v.Name)}
		switch {
		case v.EmptyDir != nil:
			vol.Kind = KindEmptyDir
		case v.HostPath != nil:
			vol.Kind = KindHostPath
			vol.HostPath = filepath.Clean(v.HostPath.Path)
			if v.HostPath.Type != nil {
				vol.HostPathType = *v.HostPath.Type
			}
		case v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
			vol.Kind = KindFiles
			vol.ReadOnly = true
		case v.PersistentVolumeClaim != nil:
			vol.Kind = KindClaim
			vol.Claim = pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
			vol.HostPath = ClaimDir(stateDir, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			vol.ReadOnly = v.PersistentVolumeClaim.ReadOnly
		case v.Ephemeral != nil:
			// Generic ephemeral volumes are claims named <pod>-<volume>,
			// created by kube-controller-manager.
			claim := pod.Name + "-" + v.Name
			vol.Kind = KindClaim
			vol.Claim = pod.Namespace + "/" + claim
			vol.HostPath = ClaimDir(stateDir, pod.Namespace, claim)
		default:
			return nil, fmt.Errorf("volume %q: this volume type is not supported by the process node", v.Name)
		}
		out[v.Name] = vol
	}
	return out, nil
}

// ContainerMounts returns the bind mounts for a container. expand resolves
// $(VAR) in subPathExpr with the container's environment.
func ContainerMounts(c *corev1.Container, vols map[string]Volume, expand func(string) string) ([]Mount, error) {
	var out []Mount
	for _, vm := range c.VolumeMounts {
		vol, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no such volume", vm.Name)
		}
		if !filepath.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("volumeMount %q: mountPath %q is not absolute", vm.Name, vm.MountPath)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" && expand != nil {
			sub = expand(vm.SubPathExpr)
		}
		src := vol.HostPath
		if sub != "" {
			if filepath.IsAbs(sub) || hasDotDot(sub) {
				return nil, fmt.Errorf("volumeMount %q: subPath %q must be a relative path without '..'", vm.Name, sub)
			}
			src = filepath.Join(src, sub)
		}
		out = append(out, Mount{Source: src, Target: filepath.Clean(vm.MountPath), ReadOnly: vm.ReadOnly || vol.ReadOnly})
	}
	return out, nil
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return true
		}
	}
	return false
}
