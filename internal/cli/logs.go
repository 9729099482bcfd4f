package cli

import (
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/internal/joblogs"
)

func newLogsCommand(cf *clientFlags) *cobra.Command {
	var follow bool
	var container string
	cmd := &cobra.Command{
		Use:   "logs JOB",
		Short: "Print the logs of every pod of a job, interleaved, each line prefixed with its pod",
		Long: "Print the logs of every pod of a job as one stream. With -f it keeps following, and picks\n" +
			"up the pods that appear later: replacements after a restart and new tasks after a scale-up.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, ns, err := cf.restConfig()
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			var mu sync.Mutex
			out := cmd.OutOrStdout()
			return joblogs.Follow(cmd.Context(), cs, ns, args[0], joblogs.Options{Follow: follow, Container: container},
				func(l joblogs.Line) {
					mu.Lock()
					defer mu.Unlock()
					fmt.Fprintf(out, "[%s] %s\n", l.Pod, l.Text)
				})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following, including pods created later")
	cmd.Flags().StringVarP(&container, "container", "c", "", "container to read (default: the pod's first)")
	return cmd
}
