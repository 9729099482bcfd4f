package integration

import (
	"strconv"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang/coscheduling"
	"github.com/muster-dev/muster/internal/gang/volcano"
)

// priorityClass makes a PriorityClass for the test and removes it after.
func (e *env) priorityClass(name string, value int32) {
	e.t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	e.g.Expect(client.IgnoreAlreadyExists(k8s.Create(e.ctx(), pc))).To(gomega.Succeed())
	e.t.Cleanup(func() { _ = k8s.Delete(e.ctx(), pc) })
}

// bind places a pod on a node through the binding subresource, as a
// scheduler does.
func (e *env) bind(pod *corev1.Pod, node string) {
	e.t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	e.g.Expect(k8s.SubResource("binding").Create(e.ctx(), pod, b)).To(gomega.Succeed())
}

func TestNativeGangObjectsPodsAndAttempts(t *testing.T) {
	e := newEnv(t)
	e.priorityClass("muster-gang-high", 1000)
	job := e.create(e.job("ng").PyTorch().Role("master", 1).Role("worker", 3).
		Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative, PriorityClassName: "muster-gang-high"}).Obj())

	// One Workload per job, pointing back at it.
	wl := &schedulingv1alpha2.Workload{}
	e.g.Eventually(func() error { return k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "ng"}, wl) }, timeout, interval).Should(gomega.Succeed())
	e.g.Expect(metav1.IsControlledBy(wl, job)).To(gomega.BeTrue())
	e.g.Expect(wl.Spec.ControllerRef).To(gomega.Equal(&schedulingv1alpha2.TypedLocalObjectReference{APIGroup: "muster.dev", Kind: "TrainingJob", Name: "ng"}))
	e.g.Expect(wl.Spec.PodGroupTemplates).To(gomega.HaveLen(1))
	e.g.Expect(wl.Spec.PodGroupTemplates[0].Name).To(gomega.Equal("tasks"))
	e.g.Expect(wl.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang).To(gomega.Equal(&schedulingv1alpha2.GangSchedulingPolicy{MinCount: 4}))

	// One PodGroup per attempt, made before the pods that name it.
	pods := e.waitPodCount("ng", 4)
	attempt := e.get("ng").Status.Attempt
	group := "ng-" + itoa(attempt)
	pg := &schedulingv1alpha2.PodGroup{}
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: group}, pg)).To(gomega.Succeed())
	e.g.Expect(metav1.IsControlledBy(pg, job)).To(gomega.BeTrue())
	e.g.Expect(pg.CreationTimestamp.Time).To(gomega.BeTemporally("<=", pods[0].CreationTimestamp.Time))
	e.g.Expect(pg.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobName, "ng"))
	e.g.Expect(pg.Spec.PodGroupTemplateRef.Workload).To(gomega.Equal(&schedulingv1alpha2.WorkloadPodGroupTemplateReference{WorkloadName: "ng", PodGroupTemplateName: "tasks"}))
	e.g.Expect(pg.Spec.SchedulingPolicy.Gang).To(gomega.Equal(&schedulingv1alpha2.GangSchedulingPolicy{MinCount: 4}))
	for _, p := range pods {
		e.g.Expect(p.Spec.SchedulingGroup).NotTo(gomega.BeNil(), p.Name)
		e.g.Expect(p.Spec.SchedulingGroup.PodGroupName).To(gomega.Equal(ptr.To(group)), p.Name)
		e.g.Expect(p.Spec.PriorityClassName).To(gomega.Equal("muster-gang-high"), p.Name)
		e.g.Expect(p.Spec.Priority).To(gomega.Equal(ptr.To(int32(1000))), p.Name)
	}
	e.eventuallyJob("ng", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Scheduling).To(gomega.Equal(&musterv1.SchedulingStatus{Backend: musterv1.GangNative, PodGroup: group, MinAvailable: 4}))
		c := condition(j, musterv1.ConditionGangScheduled)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(gomega.Equal(string(musterv1.ReasonGangPending)))
	})

	// Placed once the whole gang is bound.
	for i := range pods {
		e.bind(&pods[i], "node-a")
	}
	e.eventuallyJob("ng", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionGangScheduled)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
	})
	for i := range pods {
		e.run(&pods[i])
	}
	e.waitPhase("ng", musterv1.PhaseRunning)

	// A lost rank restarts the whole PyTorch job: the new attempt gets a
	// PodGroup of its own and the old one goes.
	e.exit(&pods[1], 137, "OOMKilled")
	next := e.eventuallyJob("ng", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Attempt).To(gomega.BeNumerically(">", attempt))
	}).Status.Attempt
	// Bound pods stay terminating until their kubelet confirms; there is
	// none here, so the test confirms for it.
	for i := range pods {
		_ = k8s.Delete(e.ctx(), &pods[i], client.GracePeriodSeconds(0))
	}
	nextGroup := "ng-" + itoa(next)
	e.g.Eventually(func() error {
		return k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: nextGroup}, &schedulingv1alpha2.PodGroup{})
	}, timeout, interval).Should(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		var list corev1.PodList
		g.Expect(k8s.List(e.ctx(), &list, client.InNamespace(e.ns), client.MatchingLabels{musterv1.LabelJobName: "ng", musterv1.LabelJobAttempt: itoa(next)})).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(4))
		for _, p := range list.Items {
			g.Expect(p.Spec.SchedulingGroup.PodGroupName).To(gomega.Equal(ptr.To(nextGroup)))
		}
	}, timeout, interval).Should(gomega.Succeed())
	e.g.Eventually(func() bool {
		err := k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: group}, &schedulingv1alpha2.PodGroup{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(gomega.BeTrue(), "the old attempt's PodGroup is deleted")
}

func TestCoschedulingGangAndSuspend(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("cs").Role("worker", 3).
		Scheduling(musterv1.Scheduling{Backend: musterv1.GangCoscheduling, MinAvailable: 2, ScheduleTimeoutSeconds: 30}).Obj())
	pods := e.waitPodCount("cs", 3)
	group := "cs-" + itoa(e.get("cs").Status.Attempt)
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(coscheduling.GroupKind)
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: group}, pg)).To(gomega.Succeed())
	spec, _, _ := unstructured.NestedMap(pg.Object, "spec")
	e.g.Expect(spec).To(gomega.Equal(map[string]any{"minMember": int64(2), "scheduleTimeoutSeconds": int64(30)}))
	for _, p := range pods {
		e.g.Expect(p.Labels).To(gomega.HaveKeyWithValue(coscheduling.LabelPodGroup, group), p.Name)
		e.g.Expect(p.Spec.SchedulerName).To(gomega.Equal(coscheduling.DefaultSchedulerName), p.Name)
	}

	// A suspended job holds no gang, so no scheduler keeps room for it.
	e.g.Expect(e.update("cs", func(j *musterv1.TrainingJob) { j.Spec.Run.Execution = musterv1.ExecutionSuspend })).To(gomega.Succeed())
	e.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: group}, pg.DeepCopy()))
	}, timeout, interval).Should(gomega.BeTrue(), "the PodGroup of a suspended job is deleted")
	e.g.Expect(e.update("cs", func(j *musterv1.TrainingJob) { j.Spec.Run.Execution = musterv1.ExecutionStart })).To(gomega.Succeed())
	e.waitPodCount("cs", 3)
	e.eventuallyJob("cs", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Scheduling).NotTo(gomega.BeNil())
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: j.Status.Scheduling.PodGroup}, pg.DeepCopy())).To(gomega.Succeed())
	})
}

func TestGangSpecRejectedAtAdmission(t *testing.T) {
	e := newEnv(t)
	cases := map[string]struct {
		job   *musterv1.TrainingJob
		field string
	}{
		"minAvailable above the job's smallest size": {
			job:   e.job("m").Role("w", 2).Scalable(1, 4).ScalingReplicas(3).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative, MinAvailable: 2}).Obj(),
			field: "spec.scheduling.minAvailable",
		},
		"a per-role minimum without Volcano": {
			job: e.job("r").Role("w", 2).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative,
				Roles: []musterv1.RoleScheduling{{Name: "w", MinAvailable: 1}}}).Obj(),
			field: "spec.scheduling.roles",
		},
		"a queue without Volcano": {
			job:   e.job("q").Role("w", 2).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative, VolcanoQueue: "research"}).Obj(),
			field: "spec.scheduling.volcanoQueue",
		},
		"a topology no backend honours (the operator's default, None)": {
			job:   e.job("t").Role("w", 2).Scheduling(musterv1.Scheduling{Topology: musterv1.Topology{Level: "example.com/block"}}).Obj(),
			field: "spec.scheduling.topology",
		},
		"a preferred topology on the native gang": {
			job: e.job("p").Role("w", 2).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative,
				Topology: musterv1.Topology{Level: "example.com/block", Mode: musterv1.TopologyPreferred}}).Obj(),
			field: "spec.scheduling.topology.mode",
		},
		"a role's topology on the native gang": {
			job:   e.job("rt").Role("w", 2).RoleTopology("example.com/rack", musterv1.TopologyRequired).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative}).Obj(),
			field: "spec.roles[0].topology",
		},
		"a job's and a role's topology": {
			job: e.job("both").Role("w", 2).RoleTopology("example.com/rack", musterv1.TopologyRequired).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative,
				Topology: musterv1.Topology{Level: "example.com/block"}}).Obj(),
			field: "spec.scheduling.topology",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := k8s.Create(e.ctx(), c.job)
			e.g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "%v", err)
			e.g.Expect(err.Error()).To(gomega.ContainSubstring(c.field))
		})
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// A Volcano gang: its PodGroup in the job's queue with the per-role
// minimum and the minimum's resources, and no pod until Volcano lets the
// PodGroup into its queue.
func TestVolcanoGangWaitsForItsQueue(t *testing.T) {
	e := newEnv(t)
	e.priorityClass("muster-gang-high", 1000)
	cpu := func(q string) func(*corev1.PodTemplateSpec) {
		return func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
		}
	}
	e.create(e.job("vc").Role("pserver", 2).Template(cpu("1")).Role("trainer", 2).Template(cpu("2")).
		Scheduling(musterv1.Scheduling{Backend: musterv1.GangVolcano, VolcanoQueue: "research", PriorityClassName: "muster-gang-high",
			Roles: []musterv1.RoleScheduling{{Name: "pserver", MinAvailable: 2}, {Name: "trainer", MinAvailable: 1}}}).Obj())
	group := "vc-" + itoa(e.get("vc").Status.Attempt)
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(volcano.GroupKind)
	e.g.Eventually(func() error { return k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: group}, pg) }, timeout, interval).Should(gomega.Succeed())
	spec, _, _ := unstructured.NestedMap(pg.Object, "spec")
	e.g.Expect(spec).To(gomega.Equal(map[string]any{
		"minMember": int64(4), "queue": "research", "priorityClassName": "muster-gang-high",
		"minTaskMember": map[string]any{"pserver": int64(2), "trainer": int64(1)},
		"minResources":  map[string]any{"cpu": "6"},
	}))

	// Pending in its queue: no pod, and the job says why. (Volcano's
	// PodGroup has no status subresource.)
	e.g.Expect(unstructured.SetNestedField(pg.Object, "Pending", "status", "phase")).To(gomega.Succeed())
	e.g.Expect(k8s.Update(e.ctx(), pg)).To(gomega.Succeed())
	e.eventuallyJob("vc", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionGangScheduled)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Reason).To(gomega.Equal(string(musterv1.ReasonGangQueued)))
		g.Expect(c.Message).To(gomega.ContainSubstring("research"))
	})
	e.g.Consistently(func() []corev1.Pod { return e.pods("vc") }, "2s", interval).Should(gomega.BeEmpty())

	// Inqueue: the pods come, tied to the group and to Volcano.
	e.g.Expect(k8s.Get(e.ctx(), client.ObjectKeyFromObject(pg), pg)).To(gomega.Succeed())
	e.g.Expect(unstructured.SetNestedField(pg.Object, "Inqueue", "status", "phase")).To(gomega.Succeed())
	e.g.Expect(k8s.Update(e.ctx(), pg)).To(gomega.Succeed())
	for _, p := range e.waitPodCount("vc", 4) {
		e.g.Expect(p.Annotations).To(gomega.HaveKeyWithValue(volcano.AnnotationGroupName, group), p.Name)
		e.g.Expect(p.Annotations).To(gomega.HaveKeyWithValue(volcano.AnnotationTaskSpec, p.Labels[musterv1.LabelRole]), p.Name)
		e.g.Expect(p.Spec.SchedulerName).To(gomega.Equal(volcano.DefaultSchedulerName), p.Name)
		e.g.Expect(p.Spec.PriorityClassName).To(gomega.Equal("muster-gang-high"), p.Name)
	}
}
