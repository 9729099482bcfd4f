// Package scale implements `muster scale`: the size of a job's scalable
// roles through the /scale subresource, or of one fixed role.
package scale

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/plan/topology"
)

const example = `  # An elastic job's workers (spec.scaling.replicas, the /scale subresource)
  muster scale pet --replicas 3

  # A role that is not scalable (spec.roles[].replicas)
  muster scale pet --role ps --replicas 2`

// Options are scale's flags and what Complete derives from them.
type Options struct {
	Role     string
	Replicas int32

	Name      string
	Namespace string
	Client    client.Client

	genericiooptions.IOStreams
}

// NewCmd returns the scale command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, Replicas: -1}
	cmd := &cobra.Command{
		Use:               "scale JOB --replicas N [--role ROLE]",
		Short:             "Change a job's size: its scalable roles (spec.scaling), or one role with --role",
		Example:           example,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 1),
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, o.Validate, o.Run),
	}
	cmd.Flags().StringVar(&o.Role, "role", "", "a role that is not scalable, to resize through spec.roles[].replicas")
	cmd.Flags().Int32Var(&o.Replicas, "replicas", -1, "the new number of tasks")
	_ = cmd.MarkFlagRequired("replicas")
	return cmd
}

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.Name = args[0]
	var err error
	if o.Namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	o.Client, err = f.Client()
	return err
}

// Validate checks the flags alone; Run checks them against the job.
func (o *Options) Validate() error {
	if o.Replicas < 0 || o.Replicas > musterv1.MaxReplicas {
		return fmt.Errorf("job %s: --replicas %d is out of range: 0 to %d", o.Name, o.Replicas, musterv1.MaxReplicas)
	}
	return nil
}

// Run reads the job, picks what to scale and scales it.
func (o *Options) Run(ctx context.Context) error {
	job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	target, err := Target(job, o.Role, o.Replicas)
	if err != nil {
		return err
	}
	obj := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}
	if target < 0 {
		// The scalable roles go through /scale, like kubectl scale.
		scale := &autoscalingv1.Scale{ObjectMeta: obj.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: o.Replicas}}
		if err := o.Client.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(scale)); err != nil {
			return cmdutil.JobError(err, o.Namespace, o.Name)
		}
		fmt.Fprintf(o.Out, "%s scaled to %d (spec.scaling.replicas, was %d)\n", cmdutil.Ref(o.Name), o.Replicas, ptr.Deref(job.Spec.Scaling.Replicas, 0))
		return nil
	}
	// A JSON patch with a test op: if the roles changed since we read
	// them, the patch fails instead of scaling the wrong role.
	role := job.Spec.Roles[target]
	patch := fmt.Appendf(nil, `[{"op":"test","path":"/spec/roles/%d/name","value":%q},`+
		`{"op":"add","path":"/spec/roles/%d/replicas","value":%d}]`, target, role.Name, target, o.Replicas)
	if err := o.Client.Patch(ctx, obj, client.RawPatch("application/json-patch+json", patch)); err != nil {
		return cmdutil.JobError(err, o.Namespace, o.Name)
	}
	fmt.Fprintf(o.Out, "%s role %s scaled to %d (was %d)\n", cmdutil.Ref(o.Name), role.Name, o.Replicas, topology.Replicas(&role))
	return nil
}

// Target picks what to scale: -1 for the job's scalable roles (the /scale
// subresource), else the index of the role named, or of the job's only
// role. It refuses what would do nothing or be rejected, saying why.
func Target(job *musterv1.TrainingJob, role string, replicas int32) (int, error) {
	if job.Status.Finished() {
		return 0, fmt.Errorf("job %s has finished (%s): scaling it would do nothing", job.Name, job.Status.Phase)
	}
	scalable := topology.ScalableRoles(job)
	if role == "" && len(scalable) > 0 {
		var lo, hi int32
		for _, r := range job.Spec.Scaling.Roles {
			lo += ptr.Deref(r.MinReplicas, 1)
			hi += r.MaxReplicas
		}
		if replicas < lo || replicas > hi {
			return 0, fmt.Errorf("job %s: --replicas %d is out of range: its scalable roles %v take %d to %d (spec.scaling.roles[].minReplicas and maxReplicas, summed)",
				job.Name, replicas, scalable, lo, hi)
		}
		return -1, nil
	}
	if role == "" {
		if len(job.Spec.Roles) != 1 {
			return 0, fmt.Errorf("job %s has several roles and none is scalable: name one with --role", job.Name)
		}
		role = job.Spec.Roles[0].Name
	}
	if slices.Contains(scalable, role) {
		return 0, fmt.Errorf("job %s: role %s is scalable: leave out --role, and --replicas sizes spec.scaling.replicas", job.Name, role)
	}
	for i, r := range job.Spec.Roles {
		if r.Name == role {
			return i, nil
		}
	}
	return 0, fmt.Errorf("job %s has no role %q: its roles are %v", job.Name, role, roleNames(job))
}

func roleNames(job *musterv1.TrainingJob) []string {
	var out []string
	for _, r := range job.Spec.Roles {
		out = append(out, r.Name)
	}
	return out
}
