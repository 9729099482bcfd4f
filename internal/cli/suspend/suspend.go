// Package suspend implements `muster suspend` and `muster resume`: they set
// spec.run.execution to Suspend and back to Start. Resuming a job a failure
// rule suspended also sets spec.run.resumeRequest, which ends such a
// suspension; either way resume is one change.
package suspend

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Options are suspend's and resume's.
type Options struct {
	Suspend bool
	// Clock gives resumeRequest its value.
	Clock clock.Clock
	cmdutil.JobPatch
}

// NewSuspendCmd returns the suspend command.
func NewSuspendCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, &Options{Suspend: true, JobPatch: cmdutil.JobPatch{IOStreams: streams}}, &cobra.Command{
		Use:     "suspend JOB...",
		Short:   "Suspend jobs: their pods are deleted, the jobs are kept (spec.run.execution: Suspend)",
		Example: "  muster suspend pet",
	})
}

// NewResumeCmd returns the resume command.
func NewResumeCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, &Options{Suspend: false, JobPatch: cmdutil.JobPatch{IOStreams: streams}}, &cobra.Command{
		Use:     "resume JOB...",
		Short:   "Resume suspended jobs: their pods are created again, as a new attempt",
		Example: "  muster resume pet",
	})
}

func newCmd(f cmdutil.Factory, o *Options, cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.MinimumNArgs(1)
	cmd.ValidArgsFunction = cmdutil.JobNames(f, 0)
	cmd.RunE = cmdutil.RunE(func(a []string) error {
		o.Clock = f.Clock()
		return o.Complete(f, a)
	}, func() error { return nil }, o.Run)
	return cmd
}

// Run patches each job; one that is already where it was asked to go, or
// has finished, is reported and left alone.
func (o *Options) Run(ctx context.Context) error {
	return o.JobPatch.Run(ctx, func(name string, job *musterv1.TrainingJob) (cmdutil.Change, error) {
		if job.Status.Finished() {
			return cmdutil.Change{}, fmt.Errorf("job %s has finished (%s): there is nothing to %s", name, job.Status.Phase, o.verb())
		}
		suspended := job.Spec.Run.Execution == musterv1.ExecutionSuspend
		if o.Suspend {
			if suspended {
				return cmdutil.Change{Said: "was already suspended"}, nil
			}
			return cmdutil.Change{Said: o.done(), Patches: []string{`{"spec":{"run":{"execution":"Suspend"}}}`}}, nil
		}
		run := map[string]string{}
		if suspended {
			run["execution"] = string(musterv1.ExecutionStart)
		}
		if suspendedByRule(job) {
			// A failure rule's suspension holds until the spec changes; a
			// new resumeRequest is that change.
			run["resumeRequest"] = o.Clock.Now().UTC().Format(time.RFC3339Nano)
		}
		if len(run) == 0 {
			return cmdutil.Change{Said: "was not suspended"}, nil
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"run": run}})
		if err != nil {
			return cmdutil.Change{}, err
		}
		return cmdutil.Change{Said: o.done(), Patches: []string{string(patch)}}, nil
	})
}

func (o *Options) verb() string {
	if o.Suspend {
		return "suspend"
	}
	return "resume"
}

func (o *Options) done() string {
	if o.Suspend {
		return "suspended"
	}
	return "resumed"
}

// suspendedByRule is whether a failure rule holds the job suspended.
func suspendedByRule(job *musterv1.TrainingJob) bool {
	c := job.Status.Condition(musterv1.ConditionSuspended)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == string(musterv1.ReasonSuspendedByPolicy) &&
		c.ObservedGeneration == job.Generation
}
