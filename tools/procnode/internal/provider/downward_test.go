package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// relabel hands the node the pod with new labels and annotations, as
// virtual-kubelet does on an update.
func relabel(t *testing.T, n *testNode, pod *corev1.Pod, labels, annotations map[string]string) {
	t.Helper()
	up := pod.DeepCopy()
	up.Labels, up.Annotations = labels, annotations
	if err := n.p.UpdatePod(context.Background(), up); err != nil {
		t.Fatal(err)
	}
}

// Downward-API environment variables are resolved from the pod as the node
// sees it at each start: a container restarted after a label change sees
// the new value.
func TestDownwardEnvFollowsLabels(t *testing.T) {
	n := newTestNode(t)
	c := withPolicy(sh("c", `echo "$TIER $NOTE" >> /data/env
		while [ ! -e /data/go ]; do sleep 0.05; done; rm /data/go; exit 1`), always)
	c.Env = []corev1.EnvVar{
		{Name: "TIER", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}},
		{Name: "NOTE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}}},
	}
	pod := testPod("downward-env", corev1.RestartPolicyNever, nil, []corev1.Container{c})
	pod.Labels, pod.Annotations = map[string]string{"tier": "a"}, map[string]string{"note": "x"}
	n.start(pod)

	n.awaitData(pod, "env", func(s string) bool { return s == "a x\n" })
	relabel(t, n, pod, map[string]string{"tier": "b"}, map[string]string{"note": "y"})
	if err := os.WriteFile(filepath.Join(n.dataDir(pod), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n.awaitData(pod, "env", func(s string) bool { return s == "a x\nb y\n" })
}

// downwardAPI volumes and projected downwardAPI items follow a change of
// the pod's labels and annotations within a second or so, published at
// once through the ..data link as the kubelet writes them.
func TestDownwardVolumeFollowsLabels(t *testing.T) {
	n := newTestNode(t)
	c := sh("c", `while true; do echo "$(cat /info/tier) $(cat /proj/note)" > /data/seen.tmp; mv /data/seen.tmp /data/seen; sleep 0.05; done`)
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: "info", MountPath: "/info"}, corev1.VolumeMount{Name: "proj", MountPath: "/proj"})
	pod := testPod("downward-volume", corev1.RestartPolicyNever, nil, []corev1.Container{c})
	pod.Labels, pod.Annotations = map[string]string{"tier": "a"}, map[string]string{"note": "x"}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{
				{Path: "tier", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			}}}},
		corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "note", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}},
			}}}}}}})
	n.start(pod)

	n.awaitData(pod, "seen", func(s string) bool { return s == "a x\n" })
	info := filepath.Join(podDir(n.p.cfg.StateDir, pod), "volumes", "info")
	if target, err := os.Readlink(filepath.Join(info, "tier")); err != nil || target != filepath.Join("..data", "tier") {
		t.Errorf("tier is not a link into ..data: %q, %v", target, err)
	}
	before, _ := os.Readlink(filepath.Join(info, "..data"))

	relabel(t, n, pod, map[string]string{"tier": "b", "new": "1"}, map[string]string{"note": "y"})
	changed := time.Now()
	n.awaitData(pod, "seen", func(s string) bool { return s == "b y\n" })
	if d := time.Since(changed); d > 1500*time.Millisecond {
		t.Errorf("the container saw the new labels after %s", d)
	}
	after, _ := os.Readlink(filepath.Join(info, "..data"))
	if after == before || !strings.HasPrefix(after, "..") {
		t.Errorf("..data was %q, is %q: a new version must replace it", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(info, "labels")); string(b) != "new=\"1\"\ntier=\"b\"" {
		t.Errorf("labels file %q", b)
	}
	if _, err := os.Stat(filepath.Join(info, before)); !os.IsNotExist(err) {
		t.Errorf("the old version %s is left: %v", before, err)
	}
}
