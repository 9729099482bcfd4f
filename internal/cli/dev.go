package cli

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/muster-dev/muster/internal/devcluster"
)

// newDevCommand is `muster dev`: a local cluster built from source that
// runs real pods as host processes.
func newDevCommand() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local Kubernetes cluster that runs real training",
		Long: `Build (once, cached by version) and run a local Kubernetes cluster on
127.0.0.1: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
CoreDNS, a process node that runs pods as host processes, optional KWOK
fake GPU nodes, and the Muster operator. Needs root (pod network namespaces).`,
	}
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", "", "folder of the cluster's certificates, data, logs and pidfiles (default $MUSTER_CACHE/dev)")
	config := func(c *cobra.Command) (*devcluster.Config, error) {
		cfg, err := devcluster.NewConfig()
		if err != nil {
			return nil, err
		}
		if stateDir != "" {
			if cfg.StateDir, err = filepath.Abs(stateDir); err != nil {
				return nil, err
			}
		}
		cfg.Out = c.OutOrStdout()
		return cfg, nil
	}
	cmd.AddCommand(newDevUpCommand(config), newDevDownCommand(config), newDevStatusCommand(config),
		newDevEnvCommand(config), newDevBuildCommand(config))
	return cmd
}

type devConfigFunc func(*cobra.Command) (*devcluster.Config, error)

func newDevUpCommand(config devConfigFunc) *cobra.Command {
	var fakeNodes, gpus int
	var noOperator bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build what is missing and start the local cluster (harmless when it runs)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := config(c)
			if err != nil {
				return err
			}
			cfg.FakeNodes, cfg.GPUsPerNode, cfg.NoOperator = -1, gpus, noOperator
			if c.Flags().Changed("fake-nodes") {
				cfg.FakeNodes = fakeNodes
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return devcluster.Up(ctx, cfg)
		},
	}
	cmd.Flags().IntVar(&fakeNodes, "fake-nodes", 0, "number of KWOK fake nodes to have (pods on them run nothing); unset leaves them as they are")
	cmd.Flags().IntVar(&gpus, "gpus-per-node", 8, "nvidia.com/gpu capacity of each fake node")
	cmd.Flags().BoolVar(&noOperator, "no-operator", false, "do not build and install the Muster operator")
	return cmd
}

func newDevDownCommand(config devConfigFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster and remove its state (harmless when nothing runs)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := config(c)
			if err != nil {
				return err
			}
			return devcluster.Down(c.Context(), cfg)
		},
	}
}

func newDevStatusCommand(config devConfigFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show each component of the local cluster and its nodes",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := config(c)
			if err != nil {
				return err
			}
			return devcluster.Status(c.Context(), cfg, c.OutOrStdout())
		},
	}
}

func newDevEnvCommand(config devConfigFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: `Print shell exports for kubectl: eval "$(muster dev env)"`,
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := config(c)
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
}

// newDevBuildCommand builds into the cache without starting anything. It
// prints the control-plane folder on stdout (progress goes to stderr), which
// is what hack/build-cluster.sh hands to the integration tests.
func newDevBuildCommand(config devConfigFunc) *cobra.Command {
	var controlPlaneOnly bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the local cluster's binaries into the cache and print the control-plane folder",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := config(c)
			if err != nil {
				return err
			}
			cfg.Out = c.ErrOrStderr()
			set := devcluster.BuildAll
			if controlPlaneOnly {
				set = devcluster.BuildSet{ControlPlane: true}
			}
			bins, err := devcluster.Build(c.Context(), cfg, set)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.OutOrStdout(), bins.ControlPlane)
			return err
		},
	}
	cmd.Flags().BoolVar(&controlPlaneOnly, "control-plane", false, "only etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl")
	return cmd
}
