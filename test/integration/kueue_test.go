package integration

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/queue/kueue"
)

// workload reads the job's Kueue Workload.
func (e *env) workload(job *musterv1.TrainingJob) *unstructured.Unstructured {
	e.t.Helper()
	return e.workloadNamed(kueue.WorkloadName(job))
}

// workloadNamed reads a Kueue Workload of the test's namespace.
func (e *env) workloadNamed(name string) *unstructured.Unstructured {
	e.t.Helper()
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(kueue.WorkloadKind)
	e.g.Eventually(func() error {
		return k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, wl)
	}, timeout, interval).Should(gomega.Succeed())
	return wl
}

// asKueue writes a Workload's status as Kueue's controllers would.
func (e *env) asKueue(job *musterv1.TrainingJob, edit func(status map[string]any)) {
	e.t.Helper()
	e.asKueueOn(kueue.WorkloadName(job), edit)
}

// asKueueOn writes the status of the named Workload as Kueue would.
func (e *env) asKueueOn(name string, edit func(status map[string]any)) {
	e.t.Helper()
	e.g.Eventually(func() error {
		wl := e.workloadNamed(name)
		status, _, _ := unstructured.NestedMap(wl.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		edit(status)
		if err := unstructured.SetNestedMap(wl.Object, status, "status"); err != nil {
			return err
		}
		return k8s.Status().Update(e.ctx(), wl)
	}, timeout, interval).Should(gomega.Succeed())
}

// flavor makes a Kueue ResourceFlavor for the test.
func (e *env) flavor(name string, spec map[string]any) {
	e.t.Helper()
	f := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	f.SetGroupVersionKind(kueue.ResourceFlavorKind)
	f.SetName(name)
	e.g.Expect(client.IgnoreAlreadyExists(k8s.Create(e.ctx(), f))).To(gomega.Succeed())
	e.t.Cleanup(func() { _ = k8s.Delete(e.ctx(), f) })
}

func setCondition(status map[string]any, t string, on bool, reason, msg string) {
	s := "False"
	if on {
		s = "True"
	}
	c := map[string]any{"type": t, "status": s, "reason": reason, "message": msg, "lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z")}
	conds, _ := status["conditions"].([]any)
	for i, x := range conds {
		if x.(map[string]any)["type"] == t {
			conds[i] = c
			status["conditions"] = conds
			return
		}
	}
	status["conditions"] = append(conds, c)
}

func admit(status map[string]any) { admitWorkers(2)(status) }

// admitWorkers admits n pods of the podSet worker on flavor pool-a.
func admitWorkers(n int64) func(status map[string]any) {
	return func(status map[string]any) {
		status["admission"] = map[string]any{
			"clusterQueue": "cq-gpu",
			"podSetAssignments": []any{map[string]any{
				"name": "worker", "count": n, "flavors": map[string]any{"cpu": "pool-a"},
			}},
		}
		setCondition(status, kueue.CondQuotaReserved, true, "QuotaReserved", "quota reserved in cq-gpu")
		setCondition(status, kueue.CondAdmitted, true, "Admitted", "admitted by cq-gpu")
	}
}

func workloadCondition(wl *unstructured.Unstructured, t string) *metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		m := r.(map[string]any)
		conds = append(conds, metav1.Condition{Type: m["type"].(string), Status: metav1.ConditionStatus(m["status"].(string)), Reason: m["reason"].(string)})
	}
	return apimeta.FindStatusCondition(conds, t)
}

// A job in a LocalQueue waits with no pods until Kueue admits its
// Workload; it then runs where the admitted flavor says; an eviction
// stops it without charging a restart and hands the quota back; its end
// finishes the Workload.
func TestKueueAdmitsEvictsAndFinishes(t *testing.T) {
	e := newEnv(t)
	e.flavor("pool-a", map[string]any{
		"nodeLabels":  map[string]any{"pool": "a"},
		"tolerations": []any{map[string]any{"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}},
	})

	spec := e.job("kq").Role("worker", 2).Completion(2, 1).Obj()
	spec.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	job := e.create(spec)

	// Held: a Workload, no pods.
	wl := e.workload(job)
	e.g.Expect(metav1.IsControlledBy(wl, job)).To(gomega.BeTrue())
	q, _, _ := unstructured.NestedString(wl.Object, "spec", "queueName")
	e.g.Expect(q).To(gomega.Equal("team-a"))
	e.g.Expect(kueue.Counts(wl)).To(gomega.Equal(map[string]int64{"worker": 2}))
	e.eventuallyJob("kq", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionSuspended)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(gomega.Equal(string(musterv1.ReasonWaitingForAdmission)))
		g.Expect(j.Status.Scheduling).NotTo(gomega.BeNil())
		g.Expect(j.Status.Scheduling.LocalQueue).To(gomega.Equal("team-a"))
		g.Expect(j.Status.Scheduling.Workload).To(gomega.Equal(kueue.WorkloadName(job)))
	})
	e.g.Consistently(func() []corev1.Pod { return e.pods("kq") }, "2s", interval).Should(gomega.BeEmpty())

	// Admitted: pods with the flavor's node labels and tolerations.
	e.asKueue(job, admit)
	pods := e.waitPodCount("kq", 2)
	for _, p := range pods {
		e.g.Expect(p.Spec.NodeSelector).To(gomega.HaveKeyWithValue("pool", "a"), p.Name)
		e.g.Expect(p.Spec.Tolerations).To(gomega.ContainElement(corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}), p.Name)
	}
	for i := range pods {
		e.run(&pods[i])
	}
	e.eventuallyJob("kq", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
		g.Expect(j.Status.Scheduling.ClusterQueue).To(gomega.Equal("cq-gpu"))
	})
	e.g.Eventually(func() *metav1.Condition { return workloadCondition(e.workload(job), kueue.CondPodsReady) }, timeout, interval).
		Should(gomega.HaveField("Status", metav1.ConditionTrue))

	// Evicted: the pods go, nothing is charged, the quota is handed back.
	e.asKueue(job, func(s map[string]any) {
		setCondition(s, kueue.CondEvicted, true, "Preempted", "preempted by a higher priority workload")
	})
	e.eventuallyJob("kq", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionSuspended)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Reason).To(gomega.Equal(string(musterv1.ReasonEvicted)))
		g.Expect(j.Status.Restarts.Accountable).To(gomega.BeZero())
	})
	e.g.Eventually(func() []corev1.Pod { return e.pods("kq") }, timeout, interval).Should(gomega.BeEmpty())
	e.g.Eventually(func(g gomega.Gomega) {
		wl := e.workload(job)
		_, admitted, _ := unstructured.NestedMap(wl.Object, "status", "admission")
		g.Expect(admitted).To(gomega.BeFalse(), "admission cleared")
		g.Expect(workloadCondition(wl, kueue.CondQuotaReserved)).To(gomega.HaveField("Status", metav1.ConditionFalse))
		g.Expect(workloadCondition(wl, kueue.CondRequeued)).To(gomega.HaveField("Status", metav1.ConditionTrue))
	}, timeout, interval).Should(gomega.Succeed())

	// Admitted again, it runs to its end, which finishes the Workload.
	e.asKueue(job, func(s map[string]any) {
		setCondition(s, kueue.CondEvicted, false, "Admitted", "")
		admit(s)
	})
	pods = e.waitPodCount("kq", 2)
	for i := range pods {
		e.exit(&pods[i], 0, "Completed")
	}
	e.waitPhase("kq", musterv1.PhaseSucceeded)
	e.g.Eventually(func() *metav1.Condition { return workloadCondition(e.workload(job), kueue.CondFinished) }, timeout, interval).
		Should(gomega.HaveField("Reason", "Succeeded"))
	e.g.Expect(e.get("kq").Status.Restarts.Accountable).To(gomega.BeZero())
}

// Kueue's partial admission: a scalable role asks for its minimum as
// minCount, and when Kueue admits fewer pods than asked the job runs at the
// admitted size.
func TestKueuePartialAdmissionRunsTheJobSmaller(t *testing.T) {
	e := newEnv(t)
	e.flavor("pool-b", map[string]any{})

	spec := e.job("part").Role("worker", 4).Scalable(2, 4).Obj()
	spec.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	job := e.create(spec)
	wl := e.workload(job)
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	e.g.Expect(sets).To(gomega.HaveLen(1))
	e.g.Expect(sets[0]).To(gomega.HaveKeyWithValue("minCount", int64(2)))

	e.asKueue(job, func(status map[string]any) {
		status["admission"] = map[string]any{
			"clusterQueue": "cq-small",
			"podSetAssignments": []any{map[string]any{
				"name": "worker", "count": int64(3), "flavors": map[string]any{"cpu": "pool-b"},
			}},
		}
		setCondition(status, kueue.CondQuotaReserved, true, "QuotaReserved", "quota reserved in cq-small")
		setCondition(status, kueue.CondAdmitted, true, "Admitted", "admitted by cq-small")
	})
	e.waitPodCount("part", 3)
	e.g.Consistently(func() []corev1.Pod { return e.pods("part") }, "2s", interval).Should(gomega.HaveLen(3))
	got := e.eventuallyJob("part", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Replicas).To(gomega.Equal(int32(3)))
	})
	e.g.Expect(got.Status.Scheduling.ClusterQueue).To(gomega.Equal("cq-small"))
}

// A role's template edited to ask for more per pod than Kueue admitted
// (one GPU a pod to eight) no longer matches the Workload: the job stops
// and is queued again as it is now, instead of running its replacements
// outside the quota. Removing the queue-name label finishes the Workload,
// so it holds no quota for a job that left the queue.
func TestKueueQuotaFollowsTheTemplateAndTheLabel(t *testing.T) {
	e := newEnv(t)
	e.flavor("pool-a", map[string]any{})

	spec := e.job("kg").Role("worker", 2).Obj()
	spec.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	spec.Spec.Roles[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: gpus("1"), Limits: gpus("1")}
	job := e.create(spec)
	first := e.workload(job)
	e.asKueue(job, admit)
	pods := e.waitPodCount("kg", 2)
	for i := range pods {
		e.run(&pods[i])
	}
	e.waitPhase("kg", musterv1.PhaseRunning)

	e.g.Expect(e.update("kg", func(j *musterv1.TrainingJob) {
		j.Spec.Roles[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: gpus("8"), Limits: gpus("8")}
	})).To(gomega.Succeed())
	e.eventuallyJob("kg", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		c := condition(j, musterv1.ConditionSuspended)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
		g.Expect(j.Status.Restarts.Accountable).To(gomega.BeZero())
	})
	e.g.Eventually(func() []corev1.Pod { return e.pods("kg") }, timeout, interval).Should(gomega.BeEmpty())
	e.g.Eventually(func(g gomega.Gomega) {
		wl := e.workload(job)
		g.Expect(wl.GetUID()).NotTo(gomega.Equal(first.GetUID()), "the Workload is made anew")
		g.Expect(workloadCondition(wl, kueue.CondAdmitted)).To(gomega.BeNil(), "queued again, not admitted")
	}, timeout, interval).Should(gomega.Succeed())

	// Admitted at eight GPUs a pod, it runs; then it leaves the queue.
	e.asKueue(job, admit)
	e.waitPodCount("kg", 2)
	e.g.Expect(e.update("kg", func(j *musterv1.TrainingJob) { delete(j.Labels, kueue.LabelQueueName) })).To(gomega.Succeed())
	e.g.Eventually(func() *metav1.Condition { return workloadCondition(e.workload(job), kueue.CondFinished) }, timeout, interval).
		Should(gomega.HaveField("Reason", "LeftQueue"))
}

// An elastic job (kueue.x-k8s.io/elastic-job) is resized under Kueue
// without stopping: grown, it keeps its running pods while a slice asks
// for the new size, and makes the new pods only once Kueue admits the
// slice in the old Workload's stead; shrunk, its Workload's count goes
// down in place. No pod is replaced and nothing is counted.
func TestKueueElasticJobResizesWithoutStopping(t *testing.T) {
	e := newEnv(t)
	e.flavor("pool-a", map[string]any{"nodeLabels": map[string]any{"pool": "a"}})
	spec := e.job("ek").Role("worker", 2).Scalable(1, 4).Obj()
	spec.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	spec.Annotations = map[string]string{kueue.AnnotationElasticJob: "true"}
	job := e.create(spec)
	first := e.workload(job)
	e.g.Expect(first.GetAnnotations()).To(gomega.HaveKeyWithValue(kueue.AnnotationElasticJob, "true"))
	e.asKueue(job, admitWorkers(2))
	running := e.runAll("ek", 2)
	e.waitPhase("ek", musterv1.PhaseRunning)
	uids := map[string]string{}
	for _, p := range running {
		uids[p.Name] = string(p.UID)
	}
	// The pods of before keep running, the same pods.
	same := func(g gomega.Gomega, pods []corev1.Pod) {
		for _, p := range pods {
			if uid, ok := uids[p.Name]; ok {
				g.Expect(string(p.UID)).To(gomega.Equal(uid), "%s was replaced", p.Name)
			}
		}
	}

	// Grown to 4: a slice asks for 4 in the first Workload's stead; the job
	// runs on at 2 meanwhile.
	e.g.Expect(e.update("ek", func(j *musterv1.TrainingJob) { j.Spec.Scaling.Replicas = new(int32(4)) })).To(gomega.Succeed())
	slice := e.workloadNamed(kueue.SliceName(e.get("ek")))
	e.g.Expect(slice.GetAnnotations()).To(gomega.HaveKeyWithValue(kueue.AnnotationReplacementFor, e.ns+"/"+first.GetName()))
	e.g.Expect(kueue.Counts(slice)).To(gomega.Equal(map[string]int64{"worker": 4}))
	e.g.Consistently(func(g gomega.Gomega) {
		pods := e.pods("ek")
		g.Expect(pods).To(gomega.HaveLen(2))
		same(g, pods)
		j := e.get("ek")
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseRunning))
		g.Expect(j.Status.Scheduling.Workload).To(gomega.Equal(first.GetName()))
	}, "2s", interval).Should(gomega.Succeed())

	// Kueue finishes the first Workload, then admits the slice: in between
	// the job runs on as the first admitted it; then two more pods.
	e.asKueueOn(first.GetName(), func(s map[string]any) {
		setCondition(s, kueue.CondFinished, true, kueue.ReasonSliceReplaced, "replaced")
	})
	e.g.Consistently(func(g gomega.Gomega) {
		pods := e.pods("ek")
		g.Expect(pods).To(gomega.HaveLen(2))
		same(g, pods)
		g.Expect(e.get("ek").Status.IsTrue(musterv1.ConditionSuspended)).To(gomega.BeFalse())
	}, "2s", interval).Should(gomega.Succeed())
	e.asKueueOn(slice.GetName(), admitWorkers(4))
	grown := e.waitPodCount("ek", 4)
	same(e.g, grown)
	for _, p := range grown {
		e.g.Expect(p.Spec.NodeSelector).To(gomega.HaveKeyWithValue("pool", "a"), p.Name)
	}
	e.runAll("ek", 4)
	e.eventuallyJob("ek", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Replicas).To(gomega.Equal(int32(4)))
		g.Expect(j.Status.Scheduling.Workload).To(gomega.Equal(slice.GetName()))
	})
	for _, p := range grown {
		uids[p.Name] = string(p.UID)
	}

	// Shrunk to 3: the slice's count goes down in place, one pod goes.
	e.g.Expect(e.update("ek", func(j *musterv1.TrainingJob) { j.Spec.Scaling.Replicas = new(int32(3)) })).To(gomega.Succeed())
	e.g.Eventually(func() map[string]int64 { return kueue.Counts(e.workloadNamed(slice.GetName())) }, timeout, interval).
		Should(gomega.Equal(map[string]int64{"worker": 3}))
	e.g.Eventually(func(g gomega.Gomega) {
		pods := e.pods("ek")
		g.Expect(pods).To(gomega.HaveLen(3))
		same(g, pods)
	}, timeout, interval).Should(gomega.Succeed())
	got := e.get("ek")
	e.g.Expect(got.Status.Restarts.Total).To(gomega.BeZero())
	e.g.Expect(got.Status.IsTrue(musterv1.ConditionSuspended)).To(gomega.BeFalse())
}

// A role with a topology request asks Kueue for it in its podSet (the
// Workload CRD's schema takes it); once Kueue admits the podSet with a
// topology assignment, its pods are created gated, with the podSet label
// and the Workload and topology annotations Kueue's TopologyUngater needs
// to give each its domain. Without the mechanism the pods would be
// scheduled at once, anywhere in the flavor.
func TestKueueTopologyGatesPodsForKueuesUngater(t *testing.T) {
	e := newEnv(t)
	e.flavor("pool-a", map[string]any{"nodeLabels": map[string]any{"pool": "a"}})
	spec := e.job("tas").Role("worker", 2).RoleTopology("example.com/block", musterv1.TopologyRequired).Obj()
	spec.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
	job := e.create(spec)

	wl := e.workload(job)
	sets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	e.g.Expect(sets).To(gomega.HaveLen(1))
	req, _, _ := unstructured.NestedStringMap(sets[0].(map[string]any), "topologyRequest")
	e.g.Expect(req).To(gomega.Equal(map[string]string{"required": "example.com/block", "podIndexLabel": musterv1.LabelTaskIndex}))

	e.asKueue(job, func(status map[string]any) {
		admitWorkers(2)(status)
		psa := status["admission"].(map[string]any)["podSetAssignments"].([]any)[0].(map[string]any)
		psa["topologyAssignment"] = map[string]any{"levels": []any{"example.com/block"}, "slices": []any{map[string]any{
			"domainCount": int64(1), "valuesPerLevel": []any{map[string]any{"universal": "b1"}}, "podCounts": map[string]any{"universal": int64(2)},
		}}}
	})
	for _, p := range e.waitPodCount("tas", 2) {
		e.g.Expect(p.Spec.SchedulingGates).To(gomega.ContainElement(corev1.PodSchedulingGate{Name: kueue.TopologyGate}), p.Name)
		e.g.Expect(p.Labels).To(gomega.HaveKeyWithValue(kueue.LabelPodSet, "worker"), p.Name)
		e.g.Expect(p.Annotations).To(gomega.HaveKeyWithValue(kueue.AnnotationWorkload, kueue.WorkloadName(job)), p.Name)
		e.g.Expect(p.Annotations).To(gomega.HaveKeyWithValue(kueue.AnnotationRequiredTopology, "example.com/block"), p.Name)
		e.g.Expect(p.Spec.NodeSelector).To(gomega.HaveKeyWithValue("pool", "a"), p.Name)
	}
}
