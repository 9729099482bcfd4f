package debug

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// lastApplied is kubectl's record of what was applied: a copy was not.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// runJob creates the job of -f, or the copy of --copy, in debug mode.
func (o *Options) runJob(ctx context.Context) error {
	job, err := o.source(ctx)
	if err != nil {
		return err
	}
	named := job.Name // the job the user named: the copy's original
	if o.CopyTo != "" {
		named = o.Job
	}
	if err := checkRoles(job, named, o.Roles); err != nil {
		return err
	}
	job.Spec.Run.Debug = Policy(o.Command, o.Roles, o.SkipInitContainers)
	if o.DryRun == "client" {
		return o.printer.PrintObj(job, o.Out)
	}
	err = o.Client.Create(ctx, job, o.createOpts()...)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("trainingjob %s/%s already exists: delete it first (muster delete %s -n %s) or choose another name%s",
			job.Namespace, job.Name, job.Name, job.Namespace, map[bool]string{true: " with --copy", false: ""}[o.CopyTo != ""])
	}
	if err != nil {
		return cmdutil.JobError(err, job.Namespace, job.Name)
	}
	if !o.human() {
		return o.printer.PrintObj(job, o.Out)
	}
	fmt.Fprintf(o.Out, "%s created in debug mode\n", cmdutil.Ref(job.Name))
	if o.DryRun == "server" {
		fmt.Fprintln(o.Out, "(server dry run: nothing was created)")
		return nil
	}
	o.jobHints(job)
	return nil
}

// source is the job to create: the one file's job, or a copy of the named
// job under its new name.
func (o *Options) source(ctx context.Context) (*musterv1.TrainingJob, error) {
	if o.CopyTo != "" {
		orig, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, o.Job)
		if err != nil {
			return nil, err
		}
		return Copy(orig, o.CopyTo), nil
	}
	docs, err := cmdutil.ReadJobs(o.Filenames, false, o.In)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s holds %d TrainingJobs: debug starts one job, give a file with one", strings.Join(o.Filenames, ", "), len(docs))
	}
	job := docs[0].Job
	switch {
	case job.Namespace == "":
		job.Namespace = o.Namespace
	case o.ExplicitNamespace && job.Namespace != o.Namespace:
		return nil, fmt.Errorf("trainingjob %s says metadata.namespace %s, the command -n %s: drop one of them", job.Name, job.Namespace, o.Namespace)
	}
	return job, nil
}

// Copy is a new job of orig's spec and labels, under name, to run anew:
// without the original's status, execution, suspension or restart request.
func Copy(orig *musterv1.TrainingJob, name string) *musterv1.TrainingJob {
	orig = orig.DeepCopy()
	job := &musterv1.TrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: musterv1.GroupVersion.String(), Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: orig.Namespace, Labels: orig.Labels, Annotations: orig.Annotations},
		Spec:       orig.Spec,
	}
	delete(job.Annotations, lastApplied)
	if len(job.Annotations) == 0 {
		job.Annotations = nil
	}
	job.Spec.Run.Execution = ""
	job.Spec.Run.ResumeRequest = ""
	job.Spec.Run.RestartRequest = ""
	return job
}

// Policy is spec.run.debug for the command (empty: the API's default,
// `sleep inf`) given to the roles named, or to every role when none is.
func Policy(command, roles []string, skipInit bool) *musterv1.DebugPolicy {
	var run *bool
	if skipInit {
		run = ptr.To(false)
	}
	if len(roles) == 0 {
		return &musterv1.DebugPolicy{Command: command, RunInitContainers: run}
	}
	d := &musterv1.DebugPolicy{}
	for _, r := range roles {
		d.Roles = append(d.Roles, musterv1.RoleDebug{Name: r, Command: command, RunInitContainers: run})
	}
	return d
}

// checkRoles says which of roles the job, named name, does not have.
func checkRoles(job *musterv1.TrainingJob, name string, roles []string) error {
	for _, r := range roles {
		if !hasRole(job, r) {
			return fmt.Errorf("trainingjob %s/%s has no role %q (--role): its roles are %s", job.Namespace, name, r, strings.Join(roleNames(job), ", "))
		}
	}
	return nil
}

// jobHints says what each role runs and how to get into its first pod.
func (o *Options) jobHints(job *musterv1.TrainingJob) {
	d := job.Spec.Run.Debug
	for _, r := range job.Spec.Roles {
		cmd := d.Command
		for _, rd := range d.Roles {
			if rd.Name == r.Name && len(rd.Command) > 0 {
				cmd = rd.Command
			}
		}
		fmt.Fprintf(o.Out, "  role %s runs: %s\n", r.Name, command(cmd))
	}
	if len(job.Spec.Roles) == 0 {
		return
	}
	first := job.Spec.Roles[0].Name
	fmt.Fprintf(o.Out, "Once its pods run (muster wait %s -n %s --for=phase=Running), exec into one, e.g.:\n", job.Name, job.Namespace)
	fmt.Fprintf(o.Out, "  kubectl exec -it -n %s %s -- sh\n", job.Namespace, objects.PodName(job.Name, first, 0))
	fmt.Fprintf(o.Out, "Delete the job when done: muster delete %s -n %s\n", job.Name, job.Namespace)
}

func hasRole(job *musterv1.TrainingJob, role string) bool {
	for _, r := range job.Spec.Roles {
		if r.Name == role {
			return true
		}
	}
	return false
}

func roleNames(job *musterv1.TrainingJob) []string {
	var out []string
	for _, r := range job.Spec.Roles {
		out = append(out, r.Name)
	}
	return out
}
