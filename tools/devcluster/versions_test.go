package devcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadClusterVersions(t *testing.T) {
	root := t.TempDir()
	gomod := "module x\n\ngo 1.26.0\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.6.16\n\tk8s.io/kubernetes v1.36.3\n)\n\nrequire k8s.io/kubernetes/other v9.9.9 // indirect\n"
	if err := writeFile(filepath.Join(root, "tools", "cluster", "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := ReadClusterVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kubernetes != "v1.36.3" || v.Etcd != "v3.6.16" {
		t.Errorf("got %+v", v)
	}
	if requiredVersion("require k8s.io/kubernetes v1.2.3\n", "k8s.io/kubernetes") != "v1.2.3" {
		t.Error("single-line require not read")
	}
}

func TestTheRepositoryPinsTheClusterVersions(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "cluster", "go.mod")); err != nil {
		t.Fatal(err)
	}
	v, err := ReadClusterVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kubernetes != "v1.36.3" || v.Etcd != "v3.6.16" {
		t.Errorf("tools/cluster pins %+v; the feature gates here are for Kubernetes v1.36.3 and etcd v3.6.16", v)
	}
}

func TestVersionLDFlags(t *testing.T) {
	ld := versionLDFlags("v1.36.3")
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitVersion=v1.36.3",
		"-X k8s.io/component-base/version.gitMinor=36",
		"-X k8s.io/client-go/pkg/version.gitVersion=v1.36.3",
		"-X k8s.io/client-go/pkg/version.gitMajor=1",
	} {
		if !strings.Contains(ld, want) {
			t.Errorf("ldflags lack %q: %s", want, ld)
		}
	}
}
