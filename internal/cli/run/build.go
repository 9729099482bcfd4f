package run

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// scriptDir is where a --script file is mounted in the job's containers.
const scriptDir = "/opt/muster/script"

// Spec is what the run flags say about the job, parsed.
type Spec struct {
	Name, Namespace string
	Image           string
	// Command is what follows --, run as given; with Script it is the
	// script's arguments.
	Command []string
	// Script is a local file shipped in a ConfigMap; ScriptName is its
	// file name there.
	Script, ScriptName string
	// PyTorch runs the role under torchrun's elastic agent, MinNodes to
	// MaxNodes pods of NProcPerNode processes each; otherwise the role
	// has MaxNodes pods running the command as it is.
	PyTorch            bool
	MinNodes, MaxNodes int32
	NProcPerNode       string
	Role               string
	Env                []corev1.EnvVar
	GPUs               int64
	RestartPolicy      musterv1.RestartPolicy
	BackoffLimit       *int32
	RestartMode        musterv1.RestartMode
	Queue              string
	Gang               musterv1.GangBackend
}

// parseNodes reads --nnodes: N or MIN:MAX.
func parseNodes(s string) (lo, hi int32, err error) {
	minS, maxS, ranged := strings.Cut(s, ":")
	if !ranged {
		maxS = minS
	}
	a, err1 := strconv.ParseInt(minS, 10, 32)
	b, err2 := strconv.ParseInt(maxS, 10, 32)
	if err1 != nil || err2 != nil || a < 1 || b < a {
		return 0, 0, fmt.Errorf("--nnodes %q: N or MIN:MAX, with 1 <= MIN <= MAX", s)
	}
	return int32(a), int32(b), nil
}

// parseEnv reads --env NAME=VALUE.
func parseEnv(kvs []string) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: NAME=VALUE", kv)
		}
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out, nil
}

// Build makes the TrainingJob the flags describe and, with --script, the
// ConfigMap that ships the script. It never talks to the cluster.
func Build(s Spec) (*musterv1.TrainingJob, *corev1.ConfigMap) {
	ctr := corev1.Container{Name: "main", Image: s.Image, Env: s.Env}
	var cm *corev1.ConfigMap
	var volumes []corev1.Volume
	switch {
	case s.Script != "":
		cm = &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: s.Name + "-script", Namespace: s.Namespace},
			Data:       map[string]string{s.ScriptName: s.Script},
		}
		runner := []string{"python3"}
		if s.PyTorch {
			runner = []string{"torchrun"}
		}
		ctr.Command = append(append(runner, path.Join(scriptDir, s.ScriptName)), s.Command...)
		ctr.VolumeMounts = []corev1.VolumeMount{{Name: "script", MountPath: scriptDir, ReadOnly: true}}
		volumes = []corev1.Volume{{Name: "script", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
		}}}
	default:
		ctr.Command = s.Command
	}
	if s.GPUs > 0 {
		ctr.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(s.GPUs, resource.DecimalSI)}
	}
	role := musterv1.Role{
		Name:          s.Role,
		RestartPolicy: s.RestartPolicy,
		// An elastic world survives a lost worker, and a plain command's
		// tasks are independent: either way a failed task restarts alone.
		RestartScope: musterv1.RestartScopeTask,
		Template:     corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}, Volumes: volumes}},
	}
	job := &musterv1.TrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: musterv1.GroupVersion.String(), Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace},
	}
	if s.PyTorch {
		job.Spec.Runtime = &musterv1.Runtime{PyTorch: &musterv1.PyTorchRuntime{
			Elastic: &musterv1.ElasticPolicy{NProcPerNode: s.NProcPerNode},
		}}
		job.Spec.Scaling = musterv1.Scaling{
			Replicas: new(s.MaxNodes),
			Roles:    []musterv1.ScalingRole{{Name: s.Role, MinReplicas: new(s.MinNodes), MaxReplicas: s.MaxNodes}},
		}
	} else {
		role.Replicas = new(s.MaxNodes)
	}
	job.Spec.Roles = []musterv1.Role{role}
	if s.BackoffLimit != nil {
		job.Spec.FailurePolicy.BackoffLimit = s.BackoffLimit
	}
	job.Spec.FailurePolicy.RestartMode = s.RestartMode
	if s.Queue != "" {
		job.Labels = map[string]string{"kueue.x-k8s.io/queue-name": s.Queue}
	}
	if s.Gang != "" {
		job.Spec.Scheduling = musterv1.Scheduling{Backend: s.Gang}
	}
	return job, cm
}
