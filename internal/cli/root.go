// Package cli implements the muster command: one file per verb.
package cli

import (
	"github.com/spf13/cobra"
)

// NewRootCommand builds the muster command and its verbs.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "muster",
		Short:         "Run elastic, fault-tolerant distributed training jobs on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	cf := newClientFlags(root)
	root.AddCommand(
		newListCommand(cf),
		newDescribeCommand(cf),
		newSuspendCommand(cf, true),
		newSuspendCommand(cf, false),
		newDeleteCommand(cf),
		newLogsCommand(cf),
		newScaleCommand(cf),
	)
	return root
}
