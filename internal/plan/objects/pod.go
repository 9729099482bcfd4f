package objects

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// OwnerReference makes an object a controlled child of job, so deleting the
// job deletes it.
func OwnerReference(job *musterv1.TrainingJob) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         musterv1.GroupVersion.String(),
		Kind:               "TrainingJob",
		Name:               job.Name,
		UID:                job.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// JobLabels are the labels every child of job carries.
func JobLabels(job *musterv1.TrainingJob) map[string]string {
	return map[string]string{musterv1.LabelJobName: job.Name}
}

// DesiredPod builds the pod of one task instance: the role's template with
// placeholders replaced, Muster's labels, env and naming, and
// restartPolicy Never because the operator decides every restart.
func DesiredPod(job *musterv1.TrainingJob, role *musterv1.Role, index, taskAttempt int32) (*corev1.Pod, error) {
	t := taskRef{job: job, role: role, index: index, taskAttempt: taskAttempt}
	name := t.podName()
	tmpl, err := ApplyPlaceholders(&role.Template, Placeholders{
		JobNamespace: job.Namespace, JobName: job.Name, JobUID: string(job.UID),
		Role: role.Name, PodName: name, TaskIndex: index,
		JobAttempt: job.Status.Attempt, TaskAttempt: taskAttempt,
	})
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{
		ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
		Spec:       tmpl.Spec,
	}
	pod.Name = name
	pod.GenerateName = ""
	pod.Namespace = job.Namespace
	pod.OwnerReferences = []metav1.OwnerReference{OwnerReference(job)}
	pod.Finalizers = append(pod.Finalizers, musterv1.FinalizerTracking)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[musterv1.LabelJobName] = job.Name
	pod.Labels[musterv1.LabelRole] = role.Name
	pod.Labels[musterv1.LabelTaskIndex] = strconv.Itoa(int(index))
	pod.Labels[musterv1.LabelJobAttempt] = strconv.Itoa(int(job.Status.Attempt))
	pod.Labels[musterv1.LabelTaskAttempt] = strconv.Itoa(int(taskAttempt))
	if topology.ScalingOf(job, role.Name) != nil {
		pod.Labels[musterv1.LabelScalable] = "true"
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[musterv1.AnnotationJobUID] = string(job.UID)

	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = name
	}
	if pod.Spec.Subdomain == "" {
		pod.Spec.Subdomain = ServiceName(job)
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	w := runtimeWiring(t)
	// Before the debug command: skipInitContainers drops the wait step too.
	applyWiring(w, &pod.Spec)
	applyDebug(job.Spec.Run.Debug, role.Name, &pod.Spec)

	env := append(musterEnv(t), w.env...)
	prependEnv(pod.Spec.InitContainers, env)
	prependEnv(pod.Spec.Containers, env)
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].TerminationMessagePolicy == "" {
				// The last lines of a crashed container's log say more than
				// an empty termination message.
				cs[i].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			}
		}
	}
	return pod, nil
}

// DesiredService is the job's one headless Service. It publishes pods
// before they are ready, so peers resolve each other as soon as they have an
// address, not after a readiness probe that training pods rarely have.
func DesiredService(job *musterv1.TrainingJob) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ServiceName(job),
			Namespace:       job.Namespace,
			Labels:          JobLabels(job),
			OwnerReferences: []metav1.OwnerReference{OwnerReference(job)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 JobLabels(job),
			PublishNotReadyAddresses: true,
		},
	}
}

// defaultDebugCommand keeps a debug pod alive for a user to exec into.
var defaultDebugCommand = []string{"sleep", "inf"}

// applyDebug replaces the commands of a debug-mode pod: the role's own
// settings win over the job's, which win over `sleep inf`.
func applyDebug(d *musterv1.DebugPolicy, role string, spec *corev1.PodSpec) {
	if d == nil {
		return
	}
	command, skipInit := d.Command, !ptr.Deref(d.RunInitContainers, true)
	for _, r := range d.Roles {
		if r.Name == role {
			if len(r.Command) > 0 {
				command = r.Command
			}
			skipInit = skipInit || !ptr.Deref(r.RunInitContainers, true)
		}
	}
	if len(command) == 0 {
		command = defaultDebugCommand
	}
	for i := range spec.Containers {
		spec.Containers[i].Command = append([]string(nil), command...)
		spec.Containers[i].Args = nil
	}
	if skipInit {
		spec.InitContainers = nil
	}
}
