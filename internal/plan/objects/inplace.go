package objects

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/restartwatch"
)

// How a pod restarts in place (see internal/restartwatch): its restart
// watcher, the first init container and a native sidecar, exits with
// restartwatch.ExitCode when the operator raises the pod's
// muster.dev/in-place-restarts annotation, and its restart rule turns that
// exit into RestartAllContainers. Every restart of all containers is one
// the operator asked for, so that it can count them.
//
// A training container that fails with a code worth retrying is restarted
// alone by a rule of its own (Restart), which keeps the pod alive and its
// exit in the container's last state, where the operator reads it however
// late it looks; the operator then restarts the whole pod into the next
// attempt. A rule of RestartAllContainers would restart the pod at once,
// and the kubelet replaces the last state of every container it removes:
// an operator that looked a moment later would find the failure's exit
// code gone. One that succeeds, or fails for good, ends the pod as before.
const (
	// RestartWatcherName is the restart watcher's container name.
	RestartWatcherName = "muster-restart-watcher"
	inPlaceVolume      = "muster-in-place"
	inPlaceMountPath   = "/etc/muster/in-place"
	inPlaceFile        = "restarts"
	// The restart watcher keeps the value it last acted on in a file of
	// its own, on a volume that outlives its restarts
	// (restartwatch.Start); it holds one number.
	watcherStateVolume    = "muster-restart-watcher"
	watcherStateMountPath = "/var/run/muster/restart-watcher"
	watcherStateFile      = "acted"
)

// watcherStateLimit bounds the watcher's state volume: the node evicts a
// pod whose emptyDir outgrows it, and one number never comes near.
var watcherStateLimit = resource.MustParse("1Mi")

// InPlace is how a job's pods are readied to restart in place.
type InPlace struct {
	// WatcherImage runs the restart watcher: the operator's own image.
	WatcherImage string
	// Final are the exit codes that end a training container for good
	// rather than restart its pod: 0, and the codes the job's classification
	// makes Permanent (failure.Classifier.PermanentExitCodes). A role whose
	// restart policy never restarts a task gets no rule at all (Final nil
	// and NoRetry set).
	Final []int32
	// NoRetry leaves the training containers without a restart rule: every
	// exit ends the pod, which the operator re-creates if it restarts the
	// task.
	NoRetry bool
}

// maxRuleValues is the API's bound on one rule's exit codes.
const maxRuleValues = 255

// ApplyInPlace readies pod, as DesiredPod built it, to restart in place:
//   - the restart watcher goes first among the init containers, so it runs
//     while the others (the peer wait among them) do;
//   - the attempt numbers reach the containers from the pod's labels, read
//     again by the kubelet at every start, so a restarted container sees
//     the attempt it restarted into;
//   - each training container without restart rules of its own gets
//     restartPolicy Never and one rule: an exit that is not final restarts
//     it.
func ApplyInPlace(pod *corev1.Pod, in InPlace) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[musterv1.AnnotationInPlaceRestarts] = "0"
	spec := &pod.Spec
	stateLimit := watcherStateLimit.DeepCopy()
	spec.Volumes = append(spec.Volumes, corev1.Volume{
		Name: inPlaceVolume,
		VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     inPlaceFile,
				FieldRef: annotationRef(musterv1.AnnotationInPlaceRestarts),
			}},
		}},
	}, corev1.Volume{
		Name:         watcherStateVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &stateLimit}},
	})
	followAttemptLabels(spec.InitContainers, pod.Labels)
	followAttemptLabels(spec.Containers, pod.Labels)
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if in.NoRetry || c.RestartPolicy != nil || len(c.RestartPolicyRules) > 0 {
			continue
		}
		c.RestartPolicy = new(corev1.ContainerRestartPolicyNever)
		c.RestartPolicyRules = []corev1.ContainerRestartRule{{
			Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
				Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn,
				Values:   finalCodes(in.Final),
			},
		}}
	}
	spec.InitContainers = append([]corev1.Container{restartWatcher(in.WatcherImage, spec.Containers)}, spec.InitContainers...)
}

// finalCodes is 0 and final, sorted, without repeats, within the API's
// bound (the lowest codes are kept: 0 first).
func finalCodes(final []int32) []int32 {
	out := append([]int32{0}, final...)
	slices.Sort(out)
	out = slices.Compact(out)
	return out[:min(len(out), maxRuleValues)]
}

// restartWatcher is the restart watcher's container. It asks for almost
// nothing, and for the same as it is limited to in a pod whose every
// container is (Guaranteed), so it never changes the pod's QoS class.
func restartWatcher(image string, containers []corev1.Container) corev1.Container {
	c := corev1.Container{
		Name:  RestartWatcherName,
		Image: image,
		Args: []string{"restart-watcher",
			"--file=" + inPlaceMountPath + "/" + inPlaceFile,
			"--state=" + watcherStateMountPath + "/" + watcherStateFile},
		Env: []corev1.EnvVar{{
			Name:      musterv1.EnvInPlaceRestarts,
			ValueFrom: &corev1.EnvVarSource{FieldRef: annotationRef(musterv1.AnnotationInPlaceRestarts)},
		}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: inPlaceVolume, MountPath: inPlaceMountPath, ReadOnly: true},
			{Name: watcherStateVolume, MountPath: watcherStateMountPath},
		},
		RestartPolicy: new(corev1.ContainerRestartPolicyAlways),
		RestartPolicyRules: []corev1.ContainerRestartRule{{
			Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
				Operator: corev1.ContainerRestartRuleOnExitCodesOpIn,
				Values:   []int32{restartwatch.ExitCode},
			},
		}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if guaranteed(containers) {
		small := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("32Mi"),
		}
		c.Resources = corev1.ResourceRequirements{Requests: small, Limits: small.DeepCopy()}
	}
	return c
}

// guaranteed is whether every container limits CPU and memory and asks
// for no less (an unset request defaults to the limit).
func guaranteed(containers []corev1.Container) bool {
	for _, c := range containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			limit, ok := c.Resources.Limits[r]
			if !ok {
				return false
			}
			if req, set := c.Resources.Requests[r]; set && req.Cmp(limit) != 0 {
				return false
			}
		}
	}
	return len(containers) > 0
}

// followAttemptLabels makes the attempt variables Muster put in
// containers read the pod's labels, which an in-place restart changes.
// Muster's hold exactly the label's value (DesiredPod); a variable of the
// same name the user set, which prependEnv kept instead, is left alone.
func followAttemptLabels(containers []corev1.Container, podLabels map[string]string) {
	labels := map[string]string{
		musterv1.EnvJobAttempt:  musterv1.LabelJobAttempt,
		musterv1.EnvTaskAttempt: musterv1.LabelTaskAttempt,
	}
	for i := range containers {
		for j := range containers[i].Env {
			e := &containers[i].Env[j]
			label, ours := labels[e.Name]
			if !ours || e.ValueFrom != nil || e.Value != podLabels[label] {
				continue
			}
			e.Value = ""
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				APIVersion: "v1", FieldPath: "metadata.labels['" + label + "']",
			}}
		}
	}
}

func annotationRef(key string) *corev1.ObjectFieldSelector {
	return &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + key + "']"}
}
