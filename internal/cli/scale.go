package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

func newScaleCommand(cf *clientFlags) *cobra.Command {
	var role string
	var replicas int32
	cmd := &cobra.Command{
		Use:   "scale JOB --replicas N [--role ROLE]",
		Short: "Change the size of a job: its scalable roles (spec.scaling), or one role with --role",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, job, err := cf.job(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ns := job.Namespace
			target, err := scaleTarget(job, role, replicas)
			if err != nil {
				return err
			}
			obj := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: args[0]}}
			if target < 0 {
				// The scalable roles go through /scale, like kubectl scale.
				scale := &autoscalingv1.Scale{ObjectMeta: obj.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
				if err := c.SubResource("scale").Update(cmd.Context(), obj, client.WithSubResourceBody(scale)); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "trainingjob %s/%s scaled to %d\n", ns, args[0], replicas)
				return nil
			}
			// A JSON patch with a test op: if the roles changed since we read
			// them, the patch fails instead of scaling the wrong role.
			patch := fmt.Appendf(nil, `[{"op":"test","path":"/spec/roles/%d/name","value":%q},`+
				`{"op":"add","path":"/spec/roles/%d/replicas","value":%d}]`, target, job.Spec.Roles[target].Name, target, replicas)
			if err := c.Patch(cmd.Context(), obj, client.RawPatch("application/json-patch+json", patch)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trainingjob %s/%s role %s scaled to %d\n", ns, args[0], job.Spec.Roles[target].Name, replicas)
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "a role that is not scalable, to resize through spec.roles[].replicas")
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "new number of tasks")
	_ = cmd.MarkFlagRequired("replicas")
	return cmd
}

// scaleTarget picks what to scale: -1 for the job's scalable roles (the
// /scale subresource), else the index of the role named, or of the job's
// only role. It refuses what would do nothing or be rejected, saying why.
func scaleTarget(job *musterv1.TrainingJob, role string, replicas int32) (int, error) {
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
	if replicas < 0 || replicas > musterv1.MaxReplicas {
		return 0, fmt.Errorf("job %s: --replicas %d is out of range: 0 to %d", job.Name, replicas, musterv1.MaxReplicas)
	}
	for i, r := range job.Spec.Roles {
		if r.Name == role {
			return i, nil
		}
	}
	return 0, fmt.Errorf("job %s has no role %q", job.Name, role)
}
