package cmdutil

import (
	"context"
	"fmt"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// JobPatch is what the verbs that change one field of each named job's
// spec share (stop, suspend, resume, restart): the jobs, the connection,
// and a loop that reads each job, asks the verb what to change, and
// applies it.
type JobPatch struct {
	Names     []string
	Namespace string
	Client    client.Client

	genericiooptions.IOStreams
}

// Change is a verb's decision for one job: the merge patches to apply in
// order (none: leave the job as it is) and the line to print after them,
// after the job's reference. An error stops the command.
type Change struct {
	Patches []string
	Said    string
}

// Complete takes the job names and connects.
func (o *JobPatch) Complete(f Factory, args []string) error {
	o.Names = args
	var err error
	if o.Namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	o.Client, err = f.Client()
	return err
}

// Run applies decide's change to each job in turn.
func (o *JobPatch) Run(ctx context.Context, decide func(name string, job *musterv1.TrainingJob) (Change, error)) error {
	for _, name := range o.Names {
		job, err := GetJob(ctx, o.Client, o.Namespace, name)
		if err != nil {
			return err
		}
		c, err := decide(name, job)
		if err != nil {
			return err
		}
		for _, p := range c.Patches {
			if err := o.Client.Patch(ctx, job, client.RawPatch("application/merge-patch+json", []byte(p))); err != nil {
				return JobError(err, o.Namespace, name)
			}
		}
		fmt.Fprintf(o.Out, "%s %s\n", Ref(name), c.Said)
	}
	return nil
}
