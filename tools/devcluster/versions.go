package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Versions of the tools that are installed with `go install pkg@version`.
// Kubernetes and etcd are not listed here: their versions are the ones
// tools/cluster/go.mod pins, so the binaries' names and version strings can
// never disagree with the code they were built from.
const (
	CoreDNSVersion = "v1.15.0"
	KWOKVersion    = "v0.8.0"
)

// ClusterVersions are the Kubernetes and etcd versions of tools/cluster.
type ClusterVersions struct {
	Kubernetes, Etcd string
}

// ReadClusterVersions reads the pinned versions from tools/cluster/go.mod.
func ReadClusterVersions(root string) (ClusterVersions, error) {
	path := filepath.Join(root, "tools", "cluster", "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return ClusterVersions{}, err
	}
	v := ClusterVersions{
		Kubernetes: requiredVersion(string(data), "k8s.io/kubernetes"),
		Etcd:       requiredVersion(string(data), "go.etcd.io/etcd/server/v3"),
	}
	if v.Kubernetes == "" || v.Etcd == "" {
		return v, fmt.Errorf("%s must require k8s.io/kubernetes and go.etcd.io/etcd/server/v3", path)
	}
	return v, nil
}

// requiredVersion finds `module version` in a go.mod's require lines.
func requiredVersion(gomod, module string) string {
	for _, line := range strings.Split(gomod, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module && f[1] != "=>" {
			return f[1]
		}
	}
	return ""
}

// versionLDFlags makes Kubernetes binaries report their real version:
// without them they say v0.0.0-master+$Format:%H$, which kubectl cannot
// parse and Helm rejects against kubeVersion constraints.
func versionLDFlags(k8sVersion string) string {
	minor := strings.SplitN(strings.TrimPrefix(k8sVersion, "v1."), ".", 2)[0]
	flags := []string{"-s", "-w"}
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", pkg+".gitVersion="+k8sVersion,
			"-X", pkg+".gitMajor=1",
			"-X", pkg+".gitMinor="+minor,
			"-X", pkg+".gitTreeState=clean")
	}
	return strings.Join(flags, " ")
}
