package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/muster-dev/muster/tools/devcluster"
)

// The verbs and their flags, which the Makefile and the README use.
func TestVerbsAndFlags(t *testing.T) {
	want := map[string][]string{
		"up":     {"fake-nodes", "gpus-per-node", "kueue", "no-operator", "scheduler", "state-dir"},
		"down":   {"state-dir"},
		"status": {"state-dir"},
		"env":    {"state-dir"},
		"build":  {"control-plane", "kueue", "scheduler", "state-dir"},
		"demo":   {"keep"},
	}
	cmds := newRootCommand().Commands()
	got := map[string][]string{}
	for _, c := range cmds {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		// One line per flag: "  -s, --name type   usage".
		var flags []string
		for _, line := range strings.Split(strings.TrimSpace(c.LocalFlags().FlagUsages()), "\n") {
			if _, rest, ok := strings.Cut(line, "--"); ok {
				flags = append(flags, strings.Fields(rest)[0])
			}
		}
		slices.Sort(flags)
		got[c.Name()] = flags
	}
	if len(got) != len(want) {
		t.Errorf("verbs %v, want %v", got, want)
	}
	for name, flags := range want {
		if !slices.Equal(got[name], flags) {
			t.Errorf("%s flags %v, want %v", name, got[name], flags)
		}
	}
}

func TestInvocation(t *testing.T) {
	bin := t.TempDir()
	exe := filepath.Join(bin, "muster-dev")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := func(string) (string, error) { return exe, nil }
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }
	hash := strings.Repeat("0123456789abcdef", 4)
	for name, tc := range map[string]struct {
		exe, wd, root string
		lookPath      func(string) (string, error)
		want          string
	}{
		"go run, from the checkout": {
			exe: "/tmp/go-build123/b001/exe/musterdev", wd: "/src/muster", root: "/src/muster",
			lookPath: notOnPath, want: "go run ./tools/musterdev",
		},
		"go run from the build cache, from a subfolder": {
			exe: "/home/u/.cache/go-build/ab/" + hash + "-d/musterdev", wd: "/src/muster/test", root: "/src/muster",
			lookPath: notOnPath, want: "go run ../tools/musterdev",
		},
		"a binary on PATH":   {exe: exe, wd: "/", lookPath: onPath, want: "muster-dev"},
		"a binary elsewhere": {exe: exe, wd: "/", lookPath: notOnPath, want: exe},
		"a binary at a path to quote": {exe: "/opt/my tools/muster-dev", wd: "/", lookPath: notOnPath,
			want: "'/opt/my tools/muster-dev'"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := invocationOf(tc.exe, tc.wd, tc.root, tc.lookPath); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNextSteps(t *testing.T) {
	t.Setenv("SUDO_USER", "")
	cfg := &devcluster.Config{StateDir: "/src/muster/.cache/dev", Command: "go run ./tools/musterdev"}
	env, down := nextSteps(cfg, "")
	if env != `eval "$(go run ./tools/musterdev env)"` || down != "go run ./tools/musterdev down" {
		t.Errorf("default state dir: %q, %q", env, down)
	}
	t.Setenv("SUDO_USER", "me")
	cfg.StateDir = "/var/tmp/my cluster"
	env, down = nextSteps(cfg, "../my cluster")
	if env != `eval "$(go run ./tools/musterdev env --state-dir '/var/tmp/my cluster')"` ||
		down != "sudo go run ./tools/musterdev down --state-dir '/var/tmp/my cluster'" {
		t.Errorf("--state-dir under sudo: %q, %q", env, down)
	}
}

func TestNoCheckoutSaysHow(t *testing.T) {
	err := noCheckout("up", devcluster.ErrNoCheckout)
	if !errors.Is(err, devcluster.ErrNoCheckout) || !strings.Contains(err.Error(), "run from a Muster checkout") ||
		!strings.Contains(err.Error(), "sudo go run ./tools/musterdev up") {
		t.Errorf("got %v", err)
	}
	if root := devcluster.BuiltFrom(); root != "" && !strings.Contains(err.Error(), "cd "+root+" && ") {
		t.Errorf("want it to name the checkout %s: %v", root, err)
	}
}
