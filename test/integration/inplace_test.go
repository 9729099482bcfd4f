package integration

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil/kubelet"
)

// A pod readied to restart in place is one the API server of the Kubernetes
// version Muster targets takes as it is: restart rules on a native sidecar
// and RestartAllContainers are kept, not dropped as a disabled feature's
// fields would be.
func TestTheAPIServerTakesAPodReadiedToRestartInPlace(t *testing.T) {
	e := newEnv(t)
	job := e.job("ip").Role("w", 1).Obj()
	job.UID = "00000000-0000-0000-0000-000000000001"
	pod, err := objects.DesiredPod(job, &job.Spec.Roles[0], 0, 1)
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	// Made by hand, not by the operator: no owner to collect it.
	pod.OwnerReferences, pod.Finalizers = nil, nil
	objects.ApplyInPlace(pod, objects.InPlace{WatcherImage: "muster-operator:test", Final: []int32{127, 210}})
	e.g.Expect(k8s.Create(e.ctx(), pod)).To(gomega.Succeed())

	var got corev1.Pod
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(pod), &got)).To(gomega.Succeed())
	watcher := got.Spec.InitContainers[0]
	e.g.Expect(watcher.Name).To(gomega.Equal(objects.RestartWatcherName))
	e.g.Expect(watcher.RestartPolicyRules).To(gomega.Equal(pod.Spec.InitContainers[0].RestartPolicyRules))
	e.g.Expect(watcher.RestartPolicyRules).To(gomega.HaveLen(1))
	e.g.Expect(watcher.RestartPolicyRules[0].Action).To(gomega.Equal(corev1.ContainerRestartRuleActionRestartAllContainers))
	e.g.Expect(got.Spec.Containers[0].RestartPolicyRules).To(gomega.Equal(pod.Spec.Containers[0].RestartPolicyRules))
	e.g.Expect(got.Spec.Containers[0].RestartPolicyRules).To(gomega.HaveLen(1))
}

// kubeletRestarted reports pod as running after the restarts it was asked
// for, as kubelet 1.36 does once it has restarted every container.
func (e *env) kubeletRestarted(pod *corev1.Pod) {
	e.t.Helper()
	fresh := e.pod(pod.Name)
	e.g.Expect(fresh.Annotations).To(gomega.HaveKey(musterv1.AnnotationInPlaceRestarts))
	kubelet.RestartedAsAsked(fresh, time.Now())
	e.setStatus(fresh, fresh.Status)
}

// A gang restart in place, through the real API server: one pod's training
// container fails and is restarted alone by its rule; the operator charges
// one restart and patches every pod into the next attempt, keeping them;
// once their node has restarted them the job runs again.
func TestAGangRestartsInPlaceThroughTheAPIServer(t *testing.T) {
	e := newEnv(t)
	job := e.job("gip").Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeJob).
		BackoffLimit(3).Obj()
	job.Spec.FailurePolicy.RestartMode = musterv1.RestartModeInPlace
	e.create(job)
	pods := e.waitPodCount("gip", 3)
	before := map[string]types.UID{}
	for i := range pods {
		e.g.Expect(pods[i].Spec.InitContainers[0].Name).To(gomega.Equal(objects.RestartWatcherName))
		before[pods[i].Name] = pods[i].UID
		e.kubeletRestarted(&pods[i])
	}
	e.waitPhase("gip", musterv1.PhaseRunning)

	failed := e.pod("gip-w-1")
	// An end in the second its run began is taken for the run before's
	// (observe.InPlaceFailure): fail in a later second, as a real run does.
	began := failed.Status.InitContainerStatuses[0].State.Running.StartedAt.Time
	e.g.Eventually(func() bool { return time.Now().Truncate(time.Second).After(began) }, timeout, 50*time.Millisecond).Should(gomega.BeTrue())
	kubelet.RestartedAlone(failed, 3, time.Now())
	e.setStatus(failed, failed.Status)

	defer func() {
		if t.Failed() {
			j := e.get("gip")
			t.Logf("job status: %+v", j.Status)
			for name := range before {
				p := e.pod(name)
				t.Logf("pod %s: labels %v ann %v status %+v", name, p.Labels, p.Annotations, p.Status)
			}
		}
	}()
	e.g.Eventually(func(g gomega.Gomega) {
		for name, uid := range before {
			p := e.pod(name)
			g.Expect(p.UID).To(gomega.Equal(uid), "%s must not be re-created", name)
			g.Expect(p.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, "1"))
			g.Expect(p.Annotations).To(gomega.HaveKeyWithValue(musterv1.AnnotationInPlaceRestarts, "1"))
		}
	}, timeout, interval).Should(gomega.Succeed())
	restarting := e.get("gip")
	e.g.Expect(restarting.Status.Restarts.Total).To(gomega.Equal(int32(1)))
	e.g.Expect(restarting.Status.Attempts).NotTo(gomega.BeEmpty())
	rec := restarting.Status.Attempts[len(restarting.Status.Attempts)-1]
	e.g.Expect(rec.PodRestarts).NotTo(gomega.BeNil())
	e.g.Expect(rec.PodRestarts.InPlace).To(gomega.Equal(int32(3)))

	for name := range before {
		e.kubeletRestarted(e.pod(name))
	}
	running := e.waitPhase("gip", musterv1.PhaseRunning)
	e.g.Expect(running.Status.Attempt).To(gomega.Equal(int32(1)))
	e.g.Expect(running.Status.Restarts.Total).To(gomega.Equal(int32(1)))
	for name, uid := range before {
		e.g.Expect(e.pod(name).UID).To(gomega.Equal(uid))
	}
}
