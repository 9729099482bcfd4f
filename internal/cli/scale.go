package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan"
)

func newScaleCommand(cf *clientFlags) *cobra.Command {
	var role string
	var replicas int32
	cmd := &cobra.Command{
		Use:   "scale JOB --replicas N [--role ROLE]",
		Short: "Change the number of tasks of a role (default: the elastic role, else the only role)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, job, err := cf.job(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ns := job.Namespace
			i, err := scaleTarget(job, role)
			if err != nil {
				return err
			}
			obj := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: args[0]}}
			if job.Spec.Roles[i].Name == plan.ScalableRole(job) {
				// The scalable role goes through /scale, like kubectl scale.
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
				`{"op":"replace","path":"/spec/roles/%d/replicas","value":%d}]`, i, job.Spec.Roles[i].Name, i, replicas)
			if err := c.Patch(cmd.Context(), obj, client.RawPatch("application/json-patch+json", patch)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trainingjob %s/%s role %s scaled to %d\n", ns, args[0], job.Spec.Roles[i].Name, replicas)
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "role to scale")
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "new number of tasks")
	_ = cmd.MarkFlagRequired("replicas")
	return cmd
}

// scaleTarget picks the role to scale: the one named, else the elastic
// role, else the job's only role.
func scaleTarget(job *musterv1.TrainingJob, role string) (int, error) {
	if role == "" {
		if rt := job.Spec.Runtime; rt != nil && rt.PyTorch != nil && rt.PyTorch.Elastic != nil {
			role = rt.PyTorch.Elastic.Role
		} else if len(job.Spec.Roles) == 1 {
			role = job.Spec.Roles[0].Name
		} else {
			return 0, fmt.Errorf("job %s has several roles: name one with --role", job.Name)
		}
	}
	for i, r := range job.Spec.Roles {
		if r.Name == role {
			return i, nil
		}
	}
	return 0, fmt.Errorf("job %s has no role %q", job.Name, role)
}
