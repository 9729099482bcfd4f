package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-dev/muster/tools/demo"
	"github.com/muster-dev/muster/tools/devcluster"
)

func newDemoCommand() *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a local cluster and run elastic PyTorch training scaled 4 -> 2 -> 3",
		Long: "Build what is missing, start the local cluster (muster-dev up), run examples/pytorch-elastic:\n" +
			"4 torchrun workers training on CPU, scaled to 2 and then to 3 while they train, each new world\n" +
			"resuming from the last checkpoint, until the job succeeds. Then stop the cluster, unless --keep.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			cfg, err := sourceConfig(cmd, "")
			if err != nil {
				return err
			}
			start := time.Now()
			if err := devcluster.Up(ctx, cfg); err != nil {
				return err
			}
			if !keep {
				defer func() {
					err = errors.Join(err, devcluster.Down(context.WithoutCancel(ctx), cfg))
				}()
			}
			rest, err := cfg.RESTConfig()
			if err != nil {
				return err
			}
			bins, _, err := cfg.BinaryPaths()
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "cluster ready in %.0fs\n\n", time.Since(start).Seconds())
			_, err = demo.Run(ctx, rest, demo.Options{
				Out:        out,
				Namespace:  "demo",
				Example:    filepath.Join(cfg.Root, "examples", "pytorch-elastic"),
				Kubectl:    bins.Kubectl(),
				Kubeconfig: cfg.Kubeconfig(),
			})
			if keep {
				env, down := nextSteps(cfg, "")
				fmt.Fprintf(out, "\nThe cluster is still up: %s; %s stops it.\n", env, down)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the cluster running afterwards")
	return cmd
}
