// Command muster-dev runs Muster's local Kubernetes cluster and the elastic
// training demo on it: `go run ./tools/musterdev up|down|status|env|build|demo`.
// It is a separate program so that the muster CLI carries only what a user
// of a real cluster needs.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/muster-dev/muster/tools/devcluster"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "muster-dev",
		Short: "Run a local Kubernetes cluster that runs real training, and the elastic demo on it",
		Long: `Build (once, cached by version) and run a local Kubernetes cluster on
127.0.0.1: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
CoreDNS, a process node that runs pods as host processes, optional KWOK
fake GPU nodes, and the Muster operator. Needs root (pod network namespaces).

up, build and demo build from a Muster checkout and run in one. status, env
and down need only the cluster's state and run anywhere: the state dir is
--state-dir, else $MUSTER_CACHE/dev, else .cache/dev in the checkout this
runs in or, outside one, the checkout it was built from.`,
		SilenceUsage: true,
	}
	root.AddCommand(newUpCommand(), newDownCommand(), newStatusCommand(), newEnvCommand(), newBuildCommand(),
		newDemoCommand())
	return root
}

// sourceConfig is the configuration of the verbs that build from the
// sources (up, build, demo): they run in a checkout, and say how when they
// are not.
func sourceConfig(c *cobra.Command, stateDir string) (*devcluster.Config, error) {
	cfg, err := devcluster.NewConfig()
	if errors.Is(err, devcluster.ErrNoCheckout) {
		return nil, noCheckout(c.Name(), err)
	}
	if err != nil {
		return nil, err
	}
	if stateDir != "" {
		if cfg.StateDir, err = filepath.Abs(stateDir); err != nil {
			return nil, err
		}
	}
	cfg.Out = c.OutOrStdout()
	cfg.Command = invocation(cfg.Root)
	return cfg, nil
}

// stateConfig is the configuration of the verbs that only read or stop a
// cluster (status, env, down): they need its state dir, not the sources.
func stateConfig(c *cobra.Command, stateDir string) (*devcluster.Config, error) {
	cfg, err := devcluster.NewStateConfig(stateDir)
	if err != nil {
		return nil, err
	}
	cfg.Out = c.OutOrStdout()
	cfg.Command = invocation(cfg.Root)
	return cfg, nil
}

// noCheckout tells how to run a verb that builds from the sources: in the
// checkout this program was built from when it knows it, else in a fresh
// clone.
func noCheckout(verb string, err error) error {
	cd := "git clone https://github.com/muster-dev/muster && cd muster"
	if root := devcluster.BuiltFrom(); root != "" {
		cd = "cd " + devcluster.ShellQuote(root)
	}
	sudo := ""
	if verb != "build" {
		sudo = "sudo "
	}
	return fmt.Errorf("muster-dev %s builds from Muster's sources: run from a Muster checkout, e.g.\n  %s && %sgo run ./tools/musterdev %s\n(%w)",
		verb, cd, sudo, verb, err)
}

func addStateDirFlag(cmd *cobra.Command, stateDir *string) {
	cmd.Flags().StringVar(stateDir, "state-dir", "", "folder of the cluster's certificates, data, logs and pidfiles (default $MUSTER_CACHE/dev)")
}

// nextSteps are the commands that use and stop a cluster just started, as
// they work when typed: by the user's own invocation, with the state dir
// when it is not the default, with sudo for down when up ran under sudo.
func nextSteps(cfg *devcluster.Config, stateDir string) (env, down string) {
	flags := ""
	if stateDir != "" {
		flags = " --state-dir " + devcluster.ShellQuote(cfg.StateDir)
	}
	sudo := ""
	if os.Getenv("SUDO_USER") != "" {
		sudo = "sudo "
	}
	return fmt.Sprintf(`eval "$(%s env%s)"`, cfg.Command, flags), sudo + cfg.Command + " down" + flags
}

// invocation is how to run this program again, for the commands messages
// suggest: `go run` and the package's path from the working directory when
// go run built it, else the executable, by its name if PATH finds it there.
func invocation(root string) string {
	exe, err := os.Executable()
	if err != nil {
		return "muster-dev"
	}
	wd, _ := os.Getwd()
	return invocationOf(exe, wd, root, exec.LookPath)
}

func invocationOf(exe, wd, root string, lookPath func(string) (string, error)) string {
	if builtByGoRun(exe) {
		pkg := "./tools/musterdev"
		if root != "" && wd != "" {
			if rel, err := filepath.Rel(wd, filepath.Join(root, "tools", "musterdev")); err == nil {
				pkg = rel
				// go run takes a folder only as a relative path that starts with . or ..
				if rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
					pkg = "./" + rel
				}
			}
		}
		return "go run " + devcluster.ShellQuote(pkg)
	}
	name := filepath.Base(exe)
	if found, err := lookPath(name); err == nil && sameFile(found, exe) {
		return name
	}
	return devcluster.ShellQuote(exe)
}

// builtByGoRun reports whether exe is a binary that go run built and runs:
// from a temporary folder (.../go-build*/b001/exe/) or, since Go 1.24, from
// the build cache (<GOCACHE>/xx/<hash>-d/).
func builtByGoRun(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) == "exe" && strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "go-build") {
		return true
	}
	hash, ok := strings.CutSuffix(filepath.Base(dir), "-d")
	return ok && len(hash) >= 32 && strings.Trim(hash, "0123456789abcdef") == ""
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
