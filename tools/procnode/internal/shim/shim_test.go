package shim

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(bin, "tool"), 0o755)
	write(filepath.Join(bin, "data"), 0o644)

	got, err := resolveCommand("tool", "/nonexistent:"+bin)
	if err != nil || got != filepath.Join(bin, "tool") {
		t.Errorf("tool: %q, %v", got, err)
	}
	code := func(err error) int {
		var se *startError
		if errors.As(err, &se) {
			return se.code
		}
		return -1
	}
	if _, err := resolveCommand("missing", bin); code(err) != ExitNotFound {
		t.Errorf("missing: %v", err)
	}
	if _, err := resolveCommand("data", bin); code(err) != ExitNotExecutable {
		t.Errorf("not executable: %v", err)
	}
	if _, err := resolveCommand("/manager", bin); code(err) != ExitNotFound {
		t.Errorf("/manager: %v", err)
	}
	if got, err := resolveCommand(filepath.Join(bin, "tool"), ""); err != nil || got != filepath.Join(bin, "tool") {
		t.Errorf("absolute: %q, %v", got, err)
	}
}

func TestEnvValue(t *testing.T) {
	env := []string{"A=1", "PATH=/x", "PATH=/y:/z", "PATHX=no"}
	if got := envValue(env, "PATH"); got != "/y:/z" {
		t.Errorf("PATH = %q", got)
	}
	if got := envValue(env, "B"); got != "" {
		t.Errorf("B = %q", got)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	if got := unescapeMountPath(`/run/with\040space\011tab`); got != "/run/with space\ttab" {
		t.Errorf("got %q", got)
	}
	if got := unescapeMountPath("/plain"); got != "/plain" {
		t.Errorf("got %q", got)
	}
}

func TestSpecRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "spec.json")
	uid := int64(1000)
	in := &Spec{NetNS: "/run/netns/x", Argv: []string{"a"}, Env: []string{"K=V"}, UID: &uid,
		Mounts: []Mount{{Source: "/s", Target: "/t", ReadOnly: true}}}
	if err := WriteSpec(p, in); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("spec mode %v: it holds secrets", st.Mode())
	}
	out, err := readSpec(p)
	if err != nil || out.NetNS != in.NetNS || *out.UID != 1000 || !out.Mounts[0].ReadOnly {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("the shim must delete the spec once read")
	}
}
