package cli

import "github.com/spf13/cobra"

// newDevCommand is replaced by the local cluster's commands.
func newDevCommand() *cobra.Command {
	return &cobra.Command{Use: "dev", Short: "Run a local Kubernetes cluster that runs real training"}
}
