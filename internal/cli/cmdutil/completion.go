package cmdutil

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// completionTimeout bounds the API call behind a TAB press.
const completionTimeout = 5 * time.Second

// JobNames completes job names of the namespace; maxArgs bounds how many
// the verb takes (0: any number). Names already on the line are left out.
func JobNames(f Factory, maxArgs int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if maxArgs > 0 && len(args) >= maxArgs {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := f.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, err := f.Namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		var jobs musterv1.TrainingJobList
		if err := c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, j := range jobs.Items {
			if strings.HasPrefix(j.Name, toComplete) && !slices.Contains(args, j.Name) {
				names = append(names, cobra.CompletionWithDesc(j.Name, string(j.Status.Phase)))
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// GetJob reads one job, with an error that names it and says what to do.
func GetJob(ctx context.Context, c client.Client, namespace, name string) (*musterv1.TrainingJob, error) {
	job := &musterv1.TrainingJob{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		return nil, JobError(err, namespace, name)
	}
	return job, nil
}

// Ref names a job as kubectl does in its messages:
// trainingjob.muster.dev/NAME.
func Ref(name string) string { return "trainingjob.muster.dev/" + name }

// RunE runs an options struct's three steps, the way every verb does.
func RunE(complete func([]string) error, validate func() error, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := complete(args); err != nil {
			return err
		}
		if err := validate(); err != nil {
			return err
		}
		return run(cmd.Context())
	}
}
