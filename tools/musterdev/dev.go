package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/muster-dev/muster/tools/devcluster"
)

func newUpCommand() *cobra.Command {
	var stateDir string
	var fakeNodes, gpus int
	var noOperator bool
	var extras extraFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build what is missing and start the local cluster (harmless when it runs)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := sourceConfig(c, stateDir)
			if err != nil {
				return err
			}
			cfg.FakeNodes, cfg.GPUsPerNode, cfg.NoOperator = -1, gpus, noOperator
			if err := extras.apply(cfg); err != nil {
				return err
			}
			if c.Flags().Changed("fake-nodes") {
				cfg.FakeNodes = fakeNodes
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := devcluster.Up(ctx, cfg); err != nil {
				return err
			}
			env, down := nextSteps(cfg, stateDir)
			fmt.Fprintf(c.OutOrStdout(), "use it with:   %s\nstop it with:  %s\n", env, down)
			return nil
		},
	}
	addStateDirFlag(cmd, &stateDir)
	cmd.Flags().IntVar(&fakeNodes, "fake-nodes", 0, "number of KWOK fake nodes to have (pods on them run nothing); unset leaves them as they are")
	cmd.Flags().IntVar(&gpus, "gpus-per-node", 8, "nvidia.com/gpu capacity of each fake node")
	cmd.Flags().BoolVar(&noOperator, "no-operator", false, "do not build and install the Muster operator")
	extras.add(cmd)
	return cmd
}

// extraFlags select the optional components of up and build.
type extraFlags struct {
	schedulers []string
	kueue      bool
}

func (f *extraFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.schedulers, "scheduler", nil,
		"gang scheduler to run beside kube-scheduler: "+strings.Join(devcluster.SchedulerNames, " or ")+
			" (repeat the flag or give a comma-separated list; built from the module proxy on first use)")
	cmd.Flags().BoolVar(&f.kueue, "kueue", false, "run Kueue's controller manager with its CRDs and webhooks (built from the module proxy on first use)")
}

func (f *extraFlags) apply(cfg *devcluster.Config) error {
	s, err := devcluster.ParseSchedulers(f.schedulers)
	if err != nil {
		return err
	}
	cfg.Schedulers, cfg.Kueue = s, f.kueue
	return nil
}

func newDownCommand() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster and remove its state (harmless when nothing runs)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := stateConfig(c, stateDir)
			if err != nil {
				return err
			}
			return devcluster.Down(c.Context(), cfg)
		},
	}
	addStateDirFlag(cmd, &stateDir)
	return cmd
}

func newStatusCommand() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component of the local cluster and its nodes",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := stateConfig(c, stateDir)
			if err != nil {
				return err
			}
			return devcluster.Status(c.Context(), cfg, c.OutOrStdout())
		},
	}
	addStateDirFlag(cmd, &stateDir)
	return cmd
}

func newEnvCommand() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "env",
		Short: `Print shell exports for kubectl: eval "$(muster-dev env)"`,
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := stateConfig(c, stateDir)
			if err != nil {
				return err
			}
			env, err := devcluster.Env(cfg)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.OutOrStdout(), env)
			return err
		},
	}
	addStateDirFlag(cmd, &stateDir)
	return cmd
}

// newBuildCommand builds into the cache without starting anything. It
// prints the control-plane folder on stdout (progress goes to stderr), as
// hack/build-cluster.sh does for the integration tests.
func newBuildCommand() *cobra.Command {
	var stateDir string
	var controlPlaneOnly bool
	var extras extraFlags
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the local cluster's binaries into the cache and print the control-plane folder",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := sourceConfig(c, stateDir)
			if err != nil {
				return err
			}
			cfg.Out = c.ErrOrStderr()
			set := devcluster.BuildAll
			if controlPlaneOnly {
				set = devcluster.BuildSet{ControlPlane: true}
			}
			if err := extras.apply(cfg); err != nil {
				return err
			}
			for _, s := range cfg.Schedulers {
				set.Coscheduling = set.Coscheduling || s == devcluster.Coscheduling
				set.Volcano = set.Volcano || s == devcluster.Volcano
			}
			set.Kueue = cfg.Kueue
			bins, err := devcluster.Build(c.Context(), cfg, set)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.OutOrStdout(), bins.ControlPlane)
			return err
		},
	}
	addStateDirFlag(cmd, &stateDir)
	cmd.Flags().BoolVar(&controlPlaneOnly, "control-plane", false, "only etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl")
	extras.add(cmd)
	return cmd
}
