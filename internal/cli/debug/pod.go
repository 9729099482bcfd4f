package debug

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/gang/coscheduling"
	"github.com/muster-dev/muster/internal/gang/volcano"
)

// LabelDebugCopyOf is on a debug copy of a task's pod: the name of the pod
// it copies. The operator selects on muster.dev/job-name, which a copy
// does not carry.
const LabelDebugCopyOf = "muster.dev/debug-copy-of"

// runTask copies the task's pod into a debug pod outside the job.
func (o *Options) runTask(ctx context.Context) error {
	job, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, o.Job)
	if err != nil {
		return err
	}
	if err := o.checkTask(job); err != nil {
		return err
	}
	pod, err := o.taskPod(ctx, job)
	if err != nil {
		return err
	}
	cp := CopyPod(pod, o.Command, o.SkipInitContainers, o.SameNode)
	if o.DryRun == "client" {
		return o.printer.PrintObj(cp, o.Out)
	}
	opts := metav1.CreateOptions{}
	if o.DryRun == "server" {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	created, err := o.Kube.CoreV1().Pods(cp.Namespace).Create(ctx, cp, opts)
	switch {
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("pod %s/%s already exists, a debug copy made before: exec into it, or delete it (kubectl delete pod -n %s %s) and run this again",
			cp.Namespace, cp.Name, cp.Namespace, cp.Name)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("pod %s/%s: %w: creating a debug copy needs the right to create pods in namespace %s", cp.Namespace, cp.Name, err, cp.Namespace)
	case err != nil:
		return fmt.Errorf("pod %s/%s: %w", cp.Namespace, cp.Name, err)
	}
	if !o.human() {
		return o.printer.PrintObj(created, o.Out)
	}
	fmt.Fprintf(o.Out, "pod/%s created: a copy of pod %s (task %s/%d of %s) running %s, outside the job\n",
		cp.Name, pod.Name, o.role, o.index, cmdutil.Ref(job.Name), command(o.Command))
	if o.DryRun == "server" {
		fmt.Fprintln(o.Out, "(server dry run: nothing was created)")
		return nil
	}
	container := ""
	if len(cp.Spec.Containers) > 1 {
		container = " -c " + cp.Spec.Containers[0].Name
	}
	fmt.Fprintf(o.Out, "Once it runs (kubectl wait -n %s --for=condition=Ready pod/%s), exec into it:\n", cp.Namespace, cp.Name)
	fmt.Fprintf(o.Out, "  kubectl exec -it -n %s %s%s -- sh\n", cp.Namespace, cp.Name, container)
	fmt.Fprintf(o.Out, "Delete it when done: kubectl delete pod -n %s %s\n", cp.Namespace, cp.Name)
	return nil
}

// checkTask says what is wrong with --task for this job: a role it does
// not have, an index beyond the role's tasks.
func (o *Options) checkTask(job *musterv1.TrainingJob) error {
	if !hasRole(job, o.role) {
		return fmt.Errorf("trainingjob %s/%s has no role %q (--task %s): its roles are %s",
			job.Namespace, job.Name, o.role, o.Task, strings.Join(roleNames(job), ", "))
	}
	n, known := tasksOf(job, o.role)
	if known && o.index >= int(n) {
		return fmt.Errorf("trainingjob %s/%s: role %s has %d tasks, indexes 0 to %d (--task %s): `muster describe %s` lists them",
			job.Namespace, job.Name, o.role, n, n-1, o.Task, job.Name)
	}
	return nil
}

// tasksOf is how many tasks the role has, as status tells it or else the
// spec; known is false when neither says.
func tasksOf(job *musterv1.TrainingJob, role string) (n int32, known bool) {
	for _, r := range job.Status.Roles {
		if r.Name == role {
			return r.Replicas, true
		}
	}
	for _, r := range job.Spec.Roles {
		if r.Name == role && r.Replicas != nil {
			return *r.Replicas, true
		}
	}
	return 0, false
}

// taskPod is the task's newest pod that is not going away.
func (o *Options) taskPod(ctx context.Context, job *musterv1.TrainingJob) (*corev1.Pod, error) {
	sel := labels.SelectorFromSet(labels.Set{
		musterv1.LabelJobName: job.Name, musterv1.LabelRole: o.role, musterv1.LabelTaskIndex: strconv.Itoa(o.index),
	})
	list, err := o.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of trainingjob %s/%s: %w", job.Namespace, job.Name, err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID != job.UID {
			continue // left by an earlier job of the same name
		}
		pods = append(pods, p)
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("trainingjob %s/%s has no pod for task %s/%d yet (phase %s, task %s): wait until it runs (muster wait %s --for=phase=Running) and try again",
			job.Namespace, job.Name, o.role, o.index, orDash(string(job.Status.Phase)), taskState(job, o.role, o.index), job.Name)
	}
	return slices.MaxFunc(pods, func(a, b *corev1.Pod) int {
		return taskAttempt(a) - taskAttempt(b)
	}), nil
}

func taskAttempt(p *corev1.Pod) int {
	n, _ := strconv.Atoi(p.Labels[musterv1.LabelTaskAttempt])
	return n
}

// taskState is the task's state as status records it.
func taskState(job *musterv1.TrainingJob, role string, index int) string {
	for _, r := range job.Status.Roles {
		if r.Name != role {
			continue
		}
		for _, t := range r.Tasks {
			count := max(int(t.Count), 1)
			if index >= int(t.Index) && index < int(t.Index)+count {
				return string(t.State)
			}
		}
	}
	return "not started"
}

// CopyPod is a debug copy of a task's pod: <pod>-debug, of the same spec
// with every container running command (empty: `sleep inf`) without args
// or probes, and without what ties it to the job: Muster's labels and
// annotation, the owner, the gang's markers and scheduler, the node
// (unless sameNode).
func CopyPod(pod *corev1.Pod, command []string, skipInit, sameNode bool) *corev1.Pod {
	src := pod.DeepCopy()
	cp := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: src.Name + "-debug", Namespace: src.Namespace,
			Labels:      map[string]string{LabelDebugCopyOf: src.Name},
			Annotations: maps.Clone(src.Annotations),
		},
		Spec: src.Spec,
	}
	gang := src.Annotations[volcano.AnnotationGroupName] != "" || src.Labels[coscheduling.LabelPodGroup] != ""
	for _, a := range []string{musterv1.AnnotationJobUID, volcano.AnnotationGroupName, volcano.AnnotationTaskSpec, lastApplied} {
		delete(cp.Annotations, a)
	}
	if len(cp.Annotations) == 0 {
		cp.Annotations = nil
	}
	s := &cp.Spec
	if gang {
		// The gang's scheduler would hold the pod for a gang it is not in.
		s.SchedulerName = ""
	}
	s.SchedulingGroup = nil
	if !sameNode {
		s.NodeName = ""
	}
	s.EphemeralContainers = nil
	s.RestartPolicy = corev1.RestartPolicyNever
	if skipInit {
		s.InitContainers = nil
	}
	for i := range s.Containers {
		c := &s.Containers[i]
		c.Command, c.Args = orDefault(command), nil
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
	}
	return cp
}

// tasks completes --task with the job's ROLE/INDEX, from its status.
func tasks(f cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
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
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		job, err := cmdutil.GetJob(ctx, c, ns, args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, r := range job.Status.Roles {
			for _, t := range r.Tasks {
				for i := t.Index; i < t.Index+max(t.Count, 1); i++ {
					if name := fmt.Sprintf("%s/%d", r.Name, i); strings.HasPrefix(name, toComplete) {
						out = append(out, cobra.CompletionWithDesc(name, string(t.State)))
					}
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
