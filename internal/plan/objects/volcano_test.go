package objects

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestVolcanoEnvAndHostsFiles(t *testing.T) {
	job := testutil.MakeJob("vj", "ns").UID("u").Runtime(musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{}}).
		Role("ps", 1).Role("data-worker", 3).Obj()
	for _, tc := range []struct {
		role  string
		index int32
		idx   string
	}{{"ps", 0, "0"}, {"data-worker", 0, "0"}, {"data-worker", 2, "2"}} {
		pod := podOf(t, job, tc.role, tc.index)
		checkEnv(t, pod, map[string]string{
			"VC_TASK_INDEX": tc.idx, "VK_TASK_INDEX": tc.idx,
			"VC_PS_HOSTS": "vj-ps-0.vj", "VC_PS_NUM": "1",
			"VC_DATA_WORKER_HOSTS": "vj-data-worker-0.vj,vj-data-worker-1.vj,vj-data-worker-2.vj", "VC_DATA_WORKER_NUM": "3",
		})
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			want := []corev1.VolumeMount{{Name: volcanoVolume, MountPath: "/etc/volcano", ReadOnly: true}}
			if diff := cmp.Diff(want, c.VolumeMounts); diff != "" {
				t.Errorf("%s/%s mounts (-want +got):\n%s", pod.Name, c.Name, diff)
			}
		}
		if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].ConfigMap.Name != "vj-svc" {
			t.Errorf("%s volumes = %+v", pod.Name, pod.Spec.Volumes)
		}
		if waitedFor(pod) != nil {
			t.Errorf("%s: a Volcano-style job waits for nobody, as under Volcano", pod.Name)
		}
	}
	objs := DesiredRuntimeObjects(job)
	if len(objs) != 1 {
		t.Fatalf("objects = %v", objs)
	}
	cm, ok := objs[0].(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("object is %T", objs[0])
	}
	want := map[string]string{"ps.host": "vj-ps-0.vj", "data-worker.host": "vj-data-worker-0.vj\nvj-data-worker-1.vj\nvj-data-worker-2.vj"}
	if diff := cmp.Diff(want, cm.Data); diff != "" || cm.Name != "vj-svc" || cm.OwnerReferences[0].UID != "u" {
		t.Errorf("ConfigMap %s owners %v data (-want +got):\n%s", cm.Name, cm.OwnerReferences, diff)
	}
}

func TestVolcanoMountPathAndLargeRoles(t *testing.T) {
	job := testutil.MakeJob("vj", "ns").Runtime(musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{MountPath: "/hosts"}}).
		Role("worker", volcanoHostsEnvMax+1).Role("zero", 0).Obj()
	pod := podOf(t, job, "worker", 5)
	checkEnv(t, pod, map[string]string{"VC_WORKER_HOSTS": "", "VC_WORKER_NUM": "1001", "VC_ZERO_NUM": "0", "VC_TASK_INDEX": "5"})
	if p := pod.Spec.Containers[0].VolumeMounts[0].MountPath; p != "/hosts" {
		t.Errorf("mount path = %q", p)
	}
	cm, _ := DesiredRuntimeObjects(job)[0].(*corev1.ConfigMap)
	if cm.Data["zero.host"] != "" || len(cm.Data["worker.host"]) == 0 {
		t.Errorf("a role of 1001 tasks is in its file, an empty role has an empty one: %d bytes, %q", len(cm.Data["worker.host"]), cm.Data["zero.host"])
	}
}
