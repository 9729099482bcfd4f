package controller

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/internal/testutil/kubelet"
)

// asFromANode fills in what a kubelet reports and a user's template adds,
// none of which planning reads: annotations, the spec, every condition,
// images and mounts, IPs, a sidecar still running.
func asFromANode(pod *corev1.Pod, at time.Time) *corev1.Pod {
	t := metav1.NewTime(at)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations["team.example.com/owner"], pod.Annotations[musterv1.AnnotationJobUID] = "vision", "uid-1"
	pod.Labels["team.example.com/app"] = "vision"
	pod.Finalizers = []string{musterv1.FinalizerTracking}
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName, InitContainers: pod.Spec.InitContainers,
		Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/train:1"}}}
	st := &pod.Status
	st.HostIP, st.QOSClass, st.StartTime = "10.0.0.7", corev1.PodQOSBurstable, &t
	if st.Phase != corev1.PodPending {
		st.PodIP = "10.244.3.9"
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	for _, c := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
	if pod.Spec.NodeName != "" {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
	for i := range st.ContainerStatuses {
		st.ContainerStatuses[i].Image, st.ContainerStatuses[i].ImageID = "registry.example.com/train:1", "sha256:4567"
	}
	st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
		Name: "sidecar", Image: "registry.example.com/sidecar:1", ImageID: "sha256:0123", ContainerID: "containerd://abc",
		Ready: true, Started: new(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		VolumeMounts: []corev1.VolumeMountStatus{{Name: "data", MountPath: "/data"}},
	})
	return pod
}

// The cache keeps pods trimmed (trimPod): planning must decide the same
// on a trimmed pod as on the whole one, or the trim dropped a field it
// reads.
func TestTrimmedPodsPlanAlike(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	job := testutil.MakeJob("j", "ns").UID("job-uid").Role("worker", 5).Obj()
	job.Status = musterv1.TrainingJobStatus{Phase: musterv1.PhaseRunning, StartTime: &metav1.Time{Time: now.Add(-time.Hour)}}
	unschedulable := testutil.MakePod(job, "worker", 2).Obj()
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}
	preempted := testutil.MakePod(job, "worker", 3).Running().Deleting().Obj()
	preempted.Spec.NodeName = "node-b"
	preempted.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "PreemptionByScheduler", Message: "preempted by a higher-priority pod"}}
	running := testutil.MakePod(job, "worker", 0).StartedAt(now.Add(-time.Minute)).Obj()
	running.Spec.NodeName = "node-a"
	failed := testutil.MakePod(job, "worker", 1).Exited(137, "OOMKilled", now.Add(-time.Second)).Obj()
	failed.Spec.NodeName = "node-a"
	evicted := testutil.MakePod(job, "worker", 4).PodReason("Evicted").Obj()
	evicted.Status.Phase, evicted.Status.Message = corev1.PodFailed, "The node was low on resource: memory."
	// A pod that restarts in place, whose training container failed and
	// was restarted alone, and one its node is restarting.
	inPlace := func(index int32) *corev1.Pod {
		p, err := objects.DesiredPod(job, &job.Spec.Roles[0], index, 1)
		if err != nil {
			t.Fatal(err)
		}
		objects.ApplyInPlace(p, objects.InPlace{WatcherImage: "m"})
		p.UID = types.UID(fmt.Sprintf("uid-%d", index))
		p.Spec.NodeName = "node-a"
		p.Annotations[musterv1.AnnotationInPlaceRestarts] = "1"
		kubelet.RestartedAsAsked(p, now.Add(-time.Minute))
		return p
	}
	rerun := inPlace(5)
	kubelet.RestartedAlone(rerun, 3, now.Add(-time.Second))
	resetting := inPlace(6)
	resetting.Annotations[musterv1.AnnotationInPlaceRestarts] = "2"
	resetting.Status.Conditions = []corev1.PodCondition{{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue}}
	// A pod whose restart watcher's image cannot be pulled: its task's
	// status says so.
	pulling, err := objects.DesiredPod(job, &job.Spec.Roles[0], 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	objects.ApplyInPlace(pulling, objects.InPlace{WatcherImage: "m"})
	pulling.UID, pulling.Spec.NodeName = "uid-7", "node-a"
	pulling.Status = corev1.PodStatus{Phase: corev1.PodPending,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: objects.RestartWatcherName, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to pull image \"m\": 401 Unauthorized"}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: pulling.Spec.Containers[0].Name, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}
	job.Spec.Roles[0].Replicas = ptr.To(int32(8))
	var whole, trimmed []*corev1.Pod
	for _, p := range []*corev1.Pod{running, failed, unschedulable, preempted, evicted, rerun, resetting, pulling} {
		p = asFromANode(p, now.Add(-time.Hour))
		whole = append(whole, p)
		out, err := trimPod(p.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		trimmed = append(trimmed, out.(*corev1.Pod))
	}

	classifier, errs := failure.ClassifierFor(job)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for i, p := range whole {
		tp := trimmed[i]
		if d := cmp.Diff(failure.ExitOf(p, classifier), failure.ExitOf(tp, classifier)); d != "" {
			t.Errorf("%s: ExitOf differs (-whole +trimmed):\n%s", p.Name, d)
		}
		if d := cmp.Diff(failure.PodEndOf(p), failure.PodEndOf(tp)); d != "" {
			t.Errorf("%s: PodEndOf differs (-whole +trimmed):\n%s", p.Name, d)
		}
		if observe.InPlaceOf(p) != observe.InPlaceOf(tp) || observe.NextInPlaceRestart(p) != observe.NextInPlaceRestart(tp) ||
			(observe.InPlaceFailure(p) == nil) != (observe.InPlaceFailure(tp) == nil) {
			t.Errorf("%s: restarting in place observed differently once trimmed", p.Name)
		}
		if f := observe.InPlaceFailure(p); f != nil {
			if d := cmp.Diff(failure.ExitOf(f, classifier), failure.ExitOf(observe.InPlaceFailure(tp), classifier)); d != "" {
				t.Errorf("%s: its in-place failure differs (-whole +trimmed):\n%s", p.Name, d)
			}
		}
		if observe.Unschedulable(p) != observe.Unschedulable(tp) || observe.EndedBeforeDeletion(p) != observe.EndedBeforeDeletion(tp) ||
			(observe.DeletedByDisruption(p) == nil) != (observe.DeletedByDisruption(tp) == nil) {
			t.Errorf("%s: observed differently once trimmed", p.Name)
		}
		if observe.Waiting(p) != observe.Waiting(tp) {
			t.Errorf("%s: waits for %q once trimmed, for %q whole", p.Name, observe.Waiting(tp), observe.Waiting(p))
		}
		if tp.Status.PodIP != p.Status.PodIP || tp.Spec.NodeName != p.Spec.NodeName {
			t.Errorf("%s: lost its IP or node", p.Name)
		}
	}
	in := func(pods []*corev1.Pod) plan.Result {
		return plan.Plan(plan.Input{Job: job.DeepCopy(), Pods: pods, HasService: true, Now: now,
			InPlace: plan.InPlaceSupport{WatcherImage: "m", Default: musterv1.RestartModeInPlace}})
	}
	if d := cmp.Diff(in(whole), in(trimmed)); d != "" {
		t.Errorf("the plan differs (-whole +trimmed):\n%s", d)
	}
	if got := observe.Waiting(trimmed[7]); got != objects.RestartWatcherName+": ImagePullBackOff" {
		t.Errorf("a pod whose watcher image cannot be pulled waits for %q", got)
	}

	// And the trim did drop what planning never reads.
	kept := trimmed[0]
	if kept.Annotations != nil || len(kept.Spec.Containers) != 0 || len(kept.Status.ContainerStatuses) != 0 || len(kept.Status.Conditions) != 0 || kept.Status.PodIPs != nil {
		t.Errorf("a running pod kept more than planning reads: %+v", kept)
	}
	if _, ok := kept.Labels["team.example.com/app"]; ok || len(kept.Labels) != len(whole[0].Labels)-1 || podJob(kept)[0] != job.Name {
		t.Errorf("want only the muster.dev/ labels kept, and the job index's, got %v", kept.Labels)
	}
	// The strings every pod repeats are held once, though each pod decoded
	// from the watch has its own copy.
	decoded := func(p *corev1.Pod) *corev1.Pod {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out := &corev1.Pod{}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
		trimmed, _ := trimPod(out)
		return trimmed.(*corev1.Pod)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	first, second := decoded(whole[0]), decoded(whole[1])
	if !same(first.Labels[musterv1.LabelRole], second.Labels[musterv1.LabelRole]) || !same(first.Namespace, second.Namespace) ||
		!same(first.Labels[musterv1.LabelJobName], second.Labels[musterv1.LabelJobName]) || !same(first.Finalizers[0], second.Finalizers[0]) {
		t.Errorf("the trimmed pods hold their own copies of the strings they share")
	}
}

// An MPI job an earlier version started has pods that mount the SSH
// Secret that version named: the trimmed pod still says which, so the
// operator records that Secret rather than making a second key pair the
// running launcher does not trust.
func TestTrimmedMPIPodsKeepTheirSSHSecret(t *testing.T) {
	job := testutil.MakeJob("mpi", "ns").UID("abc-def").Role("worker", 1).Obj()
	pod := testutil.MakePod(job, "worker", 0).Obj()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "muster-mpi-ssh", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mpi-ssh-abc", DefaultMode: ptr.To(int32(0o600))}}},
	}
	want := objects.LegacyMPISSHSecret(job, pod)
	if want == "" {
		t.Fatal("the test's pod must mount the Secret an earlier version named")
	}
	out, err := trimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*corev1.Pod)
	if got := objects.LegacyMPISSHSecret(job, trimmed); got != want {
		t.Fatalf("trimmed, the pod mounts %q, want %q", got, want)
	}
	if len(trimmed.Spec.Volumes) != 1 {
		t.Errorf("only the SSH volume is kept, got %+v", trimmed.Spec.Volumes)
	}
}
