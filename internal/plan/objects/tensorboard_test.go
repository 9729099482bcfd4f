package objects

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// The TensorBoard reads the job's claim read-only at the sub-path, is
// owned by the job, and its pod is not a peer of the job's tasks.
func TestDesiredTensorBoard(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).TensorBoard("runs/a", time.Minute).Obj()
	dep, svc, ok := DesiredTensorBoard(job)
	if !ok {
		t.Fatal("no TensorBoard for a job that asks for one")
	}
	for _, obj := range []metav1.Object{dep, svc} {
		if obj.GetName() != "j-tensorboard" || obj.GetNamespace() != "ns" || !metav1.IsControlledBy(obj, job) ||
			obj.GetLabels()[musterv1.LabelJobName] != "j" {
			t.Errorf("%s: name, owner or job label wrong: %+v", obj.GetName(), obj)
		}
	}
	pod := dep.Spec.Template
	if _, ok := pod.Labels[musterv1.LabelJobName]; ok {
		t.Errorf("the pod carries the job label, so the job's headless Service would publish it: %v", pod.Labels)
	}
	if !isSubset(dep.Spec.Selector.MatchLabels, pod.Labels) || !isSubset(svc.Spec.Selector, pod.Labels) {
		t.Errorf("selectors %v / %v do not select the pod %v", dep.Spec.Selector.MatchLabels, svc.Spec.Selector, pod.Labels)
	}
	c := pod.Spec.Containers[0]
	if c.Image != "tensorboard:test" || !slices.Equal(c.Command, []string{"tensorboard", "--logdir=/muster/logs", "--bind_all", "--port=6006"}) {
		t.Errorf("image %q command %q", c.Image, c.Command)
	}
	if m := c.VolumeMounts[0]; m.MountPath != "/muster/logs" || m.SubPath != "runs/a" || !m.ReadOnly {
		t.Errorf("mount %+v", m)
	}
	if v := pod.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "j-logs" || !v.PersistentVolumeClaim.ReadOnly {
		t.Errorf("volume %+v", v)
	}
	if job.Spec.Roles[0].Template.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly {
		t.Error("building the TensorBoard changed the job's own volume")
	}
	if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || svc.Spec.Ports[0].Port != 6006 {
		t.Errorf("strategy %q, port %d", dep.Spec.Strategy.Type, svc.Spec.Ports[0].Port)
	}

	// A changed spec changes the hash the controller compares.
	job.Spec.TensorBoard.Command = []string{"python3", "-m", "http.server", "6006"}
	changed, _, _ := DesiredTensorBoard(job)
	if changed.Annotations[AnnotationTensorBoardHash] == dep.Annotations[AnnotationTensorBoardHash] {
		t.Error("a new command left the spec hash as it was")
	}
	job.Spec.TensorBoard.Logs.Volume = "other"
	if _, _, ok := DesiredTensorBoard(job); ok {
		t.Error("a TensorBoard built on a volume the job does not have")
	}
}

func isSubset(sub, set map[string]string) bool {
	for k, v := range sub {
		if set[k] != v {
			return false
		}
	}
	return len(sub) > 0
}
