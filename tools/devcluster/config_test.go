package devcluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestNewConfigNeedsACheckout(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := NewConfig(); !errors.Is(err, ErrNoCheckout) {
		t.Errorf("NewConfig outside a checkout: %v, want ErrNoCheckout", err)
	}
}

func TestBuiltFromIsThisCheckout(t *testing.T) {
	if _, file, _, _ := runtime.Caller(0); !filepath.IsAbs(file) {
		t.Skip("built with -trimpath: no source paths to find the checkout by")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if got := BuiltFrom(); got != root {
		t.Errorf("BuiltFrom() = %q, want %q", got, root)
	}
}

// status and env read only the state dir: outside a checkout they work
// on a cluster that up recorded, and say what is missing otherwise.
func TestStatusAndEnvOutsideACheckout(t *testing.T) {
	cache := t.TempDir()
	t.Chdir(t.TempDir())
	t.Setenv("MUSTER_CACHE", cache)
	c, err := NewStateConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != "" || c.StateDir != filepath.Join(cache, "dev") {
		t.Fatalf("root %q, state dir %q", c.Root, c.StateDir)
	}
	c.Command = "/opt/bin/muster-dev"
	if _, err := Env(c); err == nil || !strings.Contains(err.Error(), "`/opt/bin/muster-dev up`") {
		t.Errorf("env without a cluster: %v", err)
	}
	var out bytes.Buffer
	if err := Status(context.Background(), c, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(none: no cluster was started with it)") {
		t.Errorf("status does not say the state dir is missing:\n%s", out.String())
	}

	if err := c.recordBinaries(&Binaries{ControlPlane: "/cache/bin/k8s", Operator: "/cache/bin/operator/muster-operator"}); err != nil {
		t.Fatal(err)
	}
	env, err := Env(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "export KUBECONFIG=" + filepath.Join(cache, "dev", "kubeconfig") + "\nexport PATH=/cache/bin/k8s:$PATH\n"; env != want {
		t.Errorf("env:\n%s\nwant\n%s", env, want)
	}
	out.Reset()
	if err := Status(context.Background(), c, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kube-apiserver           stopped  -    https://127.0.0.1:16443") {
		t.Errorf("status:\n%s", out.String())
	}
}

func TestStateConfigDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("MUSTER_CACHE", "")
	state := t.TempDir()
	c, err := NewStateConfig(state)
	if err != nil || c.StateDir != state {
		t.Errorf("--state-dir: %+v, %v", c, err)
	}
	c, err = NewStateConfig("")
	switch root := BuiltFrom(); {
	case root != "" && (err != nil || c.StateDir != filepath.Join(root, ".cache", "dev")):
		t.Errorf("default outside a checkout: %+v, %v; want the state dir under %s", c, err, root)
	case root == "" && (err == nil || !strings.Contains(err.Error(), "MUSTER_CACHE")):
		t.Errorf("default with no checkout known: %v; want it to name MUSTER_CACHE", err)
	}
}

// The process node maps the image config/manager installs: the two must
// name the same one.
func TestOperatorImageIsTheInstalledOne(t *testing.T) {
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "image: "+OperatorImage+"\n") {
		t.Errorf("config/manager/manager.yaml does not install %s", OperatorImage)
	}
}
