package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

func newListCommand(cf *clientFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List training jobs",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := cf.client()
			if err != nil {
				return err
			}
			var jobs musterv1.TrainingJobList
			opts := []client.ListOption{}
			if !all {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := c.List(cmd.Context(), &jobs, opts...); err != nil {
				return err
			}
			printJobs(cmd.OutOrStdout(), jobs.Items, all, time.Now())
			return nil
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list jobs of every namespace")
	return cmd
}

// printJobs writes one line per job, like kubectl get.
func printJobs(out io.Writer, jobs []musterv1.TrainingJob, withNamespace bool, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if withNamespace {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprintln(w, "NAME\tPHASE\tREADY\tRESTARTS\tAGE")
	for _, j := range jobs {
		if withNamespace {
			fmt.Fprintf(w, "%s\t", j.Namespace)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", j.Name, orDash(string(j.Status.Phase)), orDash(j.Status.Ready),
			j.Status.Restarts.Total, duration.HumanDuration(now.Sub(j.CreationTimestamp.Time)))
	}
	_ = w.Flush()
}

func newDescribeCommand(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe JOB",
		Short: "Show a job's status: phase, conditions, roles and every task",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, job, err := cf.job(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			describeJob(cmd.OutOrStdout(), job)
			return nil
		},
	}
}

// describeJob writes the status an engineer reads first when a job misbehaves.
func describeJob(out io.Writer, job *musterv1.TrainingJob) {
	s := job.Status
	fmt.Fprintf(out, "Name:       %s/%s\n", job.Namespace, job.Name)
	fmt.Fprintf(out, "Phase:      %s\n", orDash(string(s.Phase)))
	fmt.Fprintf(out, "Ready:      %s\n", orDash(s.Ready))
	fmt.Fprintf(out, "Restarts:   %d (%d counted against backoffLimit %d)\n", s.Restarts.Total, s.Restarts.Accountable,
		ptr.Deref(job.Spec.FailurePolicy.BackoffLimit, musterv1.DefaultBackoffLimit))
	if s.Completion != nil {
		fmt.Fprintf(out, "Completion: %s: %s\n", s.Completion.Reason, s.Completion.Message)
	}
	fmt.Fprintln(out, "Conditions:")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range s.Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	_ = w.Flush()
	fmt.Fprintln(out, "Tasks:")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  ROLE\tINDEX\tSTATE\tPOD\tATTEMPTS\tRESTARTS\tLAST EXIT")
	for _, rs := range s.Roles {
		for _, t := range rs.Tasks {
			// Tasks alike share one entry: show the range of their indexes.
			index, pod := strconv.Itoa(int(t.Index)), orDash(t.Pod)
			if t.Count > 1 {
				index = fmt.Sprintf("%d-%d", t.Index, t.Index+t.Count-1)
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%d\t%d\t%s\n", rs.Name, index, t.State, pod, t.Attempts, t.Restarts, lastExit(t.LastExit))
		}
	}
	_ = w.Flush()
}

func lastExit(e *musterv1.ExitStatus) string {
	if e == nil {
		return "-"
	}
	parts := []string{fmt.Sprintf("code %d", e.Code)}
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	if e.Phrase != "" {
		parts = append(parts, e.Phrase)
	}
	parts = append(parts, e.Attributes...)
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newSuspendCommand(cf *clientFlags, suspend bool) *cobra.Command {
	verb, short := "resume", "Resume a suspended job: its pods are created again"
	if suspend {
		verb, short = "suspend", "Suspend a job: its pods are deleted, the job is kept"
	}
	return &cobra.Command{
		Use:   verb + " JOB",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := cf.client()
			if err != nil {
				return err
			}
			job := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: args[0]}}
			patch := fmt.Appendf(nil, `{"spec":{"run":{"suspend":%t}}}`, suspend)
			if err := c.Patch(cmd.Context(), job, client.RawPatch("application/merge-patch+json", patch)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trainingjob %s/%s %sed\n", ns, args[0], strings.TrimSuffix(verb, "e"))
			return nil
		},
	}
}

func newDeleteCommand(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete JOB...",
		Short: "Delete jobs and, with them, their pods and Service",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := cf.client()
			if err != nil {
				return err
			}
			for _, name := range args {
				job := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				// Foreground: the job stays visible until its pods are gone,
				// so no task instance outlives it.
				if err := c.Delete(cmd.Context(), job, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "trainingjob %s/%s deleted\n", ns, name)
			}
			return nil
		},
	}
}
