package objects

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/restartwatch"
	"github.com/muster-dev/muster/internal/testutil"
)

func inPlacePod(t *testing.T, in InPlace, tmpl func(*corev1.PodTemplateSpec)) *corev1.Pod {
	t.Helper()
	job := testutil.MakeJob("pet", "team").UID("uid-1").Role("worker", 2).Template(tmpl).Obj()
	pod, err := DesiredPod(job, &job.Spec.Roles[0], 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	ApplyInPlace(pod, in)
	return pod
}

func TestAPodReadiedToRestartInPlace(t *testing.T) {
	pod := inPlacePod(t, InPlace{WatcherImage: "muster:v1", Final: []int32{210, 127, 127}}, func(p *corev1.PodTemplateSpec) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: "own-rules", Image: "x", RestartPolicy: new(corev1.ContainerRestartPolicyAlways),
		})
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: musterv1.EnvTaskAttempt, Value: "mine"})
	})
	if got := pod.Annotations[musterv1.AnnotationInPlaceRestarts]; got != "0" {
		t.Errorf("%s = %q, want 0", musterv1.AnnotationInPlaceRestarts, got)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("the pod's restartPolicy = %q, want Never: the operator decides", pod.Spec.RestartPolicy)
	}
	w := pod.Spec.InitContainers[0]
	if w.Name != RestartWatcherName || w.Image != "muster:v1" || pod.Spec.InitContainers[1].Name != "init" {
		t.Fatalf("the watcher must be the first init container, got %q (%q) then %q", w.Name, w.Image, pod.Spec.InitContainers[1].Name)
	}
	if w.RestartPolicy == nil || *w.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("the watcher must be a native sidecar, restartPolicy = %v", w.RestartPolicy)
	}
	if r := w.RestartPolicyRules; len(r) != 1 || r[0].Action != corev1.ContainerRestartRuleActionRestartAllContainers ||
		r[0].ExitCodes.Operator != corev1.ContainerRestartRuleOnExitCodesOpIn || !slices.Equal(r[0].ExitCodes.Values, []int32{restartwatch.ExitCode}) {
		t.Errorf("the watcher's rule = %+v", r)
	}
	if len(w.Resources.Requests) != 0 || len(w.Resources.Limits) != 0 {
		t.Errorf("in a pod that is not Guaranteed the watcher asks for nothing, got %+v", w.Resources)
	}
	main := pod.Spec.Containers[0]
	if main.RestartPolicy == nil || *main.RestartPolicy != corev1.ContainerRestartPolicyNever {
		t.Errorf("a training container's restartPolicy = %v, want Never", main.RestartPolicy)
	}
	if r := main.RestartPolicyRules; len(r) != 1 || r[0].Action != corev1.ContainerRestartRuleActionRestart ||
		r[0].ExitCodes.Operator != corev1.ContainerRestartRuleOnExitCodesOpNotIn || !slices.Equal(r[0].ExitCodes.Values, []int32{0, 127, 210}) {
		t.Errorf("a training container's rule = %+v, want Restart for codes not in [0 127 210]", r)
	}
	if own := pod.Spec.Containers[1]; len(own.RestartPolicyRules) != 0 || *own.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("a container with a restart policy of its own is left alone: %+v", own)
	}
	// The job attempt follows the label; the user's own task attempt stays.
	for _, e := range main.Env {
		switch e.Name {
		case musterv1.EnvJobAttempt:
			if e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.labels['"+musterv1.LabelJobAttempt+"']" {
				t.Errorf("%s must follow the attempt label, got %+v", e.Name, e)
			}
		case musterv1.EnvTaskAttempt:
			if e.Value != "mine" || e.ValueFrom != nil {
				t.Errorf("the user's %s must stay, got %+v", e.Name, e)
			}
		}
	}
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == inPlaceVolume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.DownwardAPI == nil || vol.DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.annotations['"+musterv1.AnnotationInPlaceRestarts+"']" {
		t.Errorf("the watcher's downward API volume = %+v", vol)
	}
	// The watcher keeps what it acted on where its restarts do not reach.
	var state *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == watcherStateVolume {
			state = &pod.Spec.Volumes[i]
		}
	}
	watcher := pod.Spec.InitContainers[0]
	if state == nil || state.EmptyDir == nil || state.EmptyDir.SizeLimit == nil ||
		!slices.Contains(watcher.Args, "--state="+watcherStateMountPath+"/"+watcherStateFile) ||
		!slices.ContainsFunc(watcher.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == watcherStateVolume && m.MountPath == watcherStateMountPath && !m.ReadOnly
		}) {
		t.Errorf("the watcher's state volume = %+v, its args %q, its mounts %+v", state, watcher.Args, watcher.VolumeMounts)
	}
}

func TestTheWatcherKeepsAGuaranteedPodGuaranteed(t *testing.T) {
	one := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	pod := inPlacePod(t, InPlace{WatcherImage: "m"}, func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: one}
	})
	w := pod.Spec.InitContainers[0].Resources
	if w.Limits.Cpu().IsZero() || w.Limits.Cpu().Cmp(*w.Requests.Cpu()) != 0 || w.Limits.Memory().Cmp(*w.Requests.Memory()) != 0 {
		t.Errorf("the watcher of a Guaranteed pod must ask for what it is limited to, got %+v", w)
	}
}

func TestARoleThatNeverRestartsGetsNoRestartRule(t *testing.T) {
	pod := inPlacePod(t, InPlace{WatcherImage: "m", NoRetry: true}, func(*corev1.PodTemplateSpec) {})
	if c := pod.Spec.Containers[0]; c.RestartPolicy != nil || len(c.RestartPolicyRules) != 0 {
		t.Errorf("got %v %+v, want no container restart policy", c.RestartPolicy, c.RestartPolicyRules)
	}
	if pod.Spec.InitContainers[0].Name != RestartWatcherName {
		t.Errorf("the watcher is there still: the rest of the gang may restart the pod")
	}
}
