package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/testutil"
)

func gangCondition(res Result) *metav1.Condition {
	return apimeta.FindStatusCondition(res.Status.Conditions, string(musterv1.ConditionGangScheduled))
}

func planGang(job *musterv1.TrainingJob, pods []*corev1.Pod, g *Gang) Result {
	return Plan(Input{Job: job, Pods: pods, HasService: true, Now: time.Unix(1000, 0), Gang: g})
}

func TestGangHoldsPodsUntilItsObjectAdmitsThem(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 3).Obj()
	cases := []struct {
		name       string
		gang       *Gang
		wantPods   int
		wantReason string
	}{
		{"no gang", nil, 3, ""},
		{"backend None", &Gang{Backend: musterv1.GangNone}, 3, ""},
		{"gang object not made yet", &Gang{Backend: musterv1.GangNative, MinAvailable: 3}, 0, string(musterv1.ReasonGangPending)},
		{"waiting in its queue", &Gang{Backend: musterv1.GangVolcano, MinAvailable: 3, Exists: true,
			State: gang.State{Reason: string(musterv1.ReasonGangQueued), Message: "queue full"}}, 0, string(musterv1.ReasonGangQueued)},
		{"backend not enabled", &Gang{Backend: musterv1.GangVolcano, Blocked: "not enabled", BlockedReason: musterv1.ReasonGangBackendDisabled}, 0, string(musterv1.ReasonGangBackendDisabled)},
		{"admitted", &Gang{Backend: musterv1.GangNative, MinAvailable: 3, Exists: true, State: gang.State{Admitted: true}}, 3, string(musterv1.ReasonGangPending)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := planGang(job.DeepCopy(), nil, c.gang)
			if len(res.CreatePods) != c.wantPods {
				t.Errorf("creates %d pods, want %d", len(res.CreatePods), c.wantPods)
			}
			cond := gangCondition(res)
			if c.wantReason == "" {
				if cond != nil {
					t.Errorf("unexpected condition %+v", cond)
				}
				return
			}
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != c.wantReason {
				t.Errorf("condition = %+v, want False/%s", cond, c.wantReason)
			}
		})
	}
}

func TestGangOfAnotherAttemptHoldsPods(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).Obj()
	job.Status.Attempt = 2
	res := planGang(job, nil, &Gang{Backend: musterv1.GangNative, Attempt: 1, MinAvailable: 2, Exists: true, State: gang.State{Admitted: true}})
	if len(res.CreatePods) != 0 {
		t.Errorf("pods of attempt 2 created while only attempt 1's gang exists")
	}
	if s := res.Status.Scheduling; s == nil || s.PodGroup != "j-2" || s.Backend != musterv1.GangNative {
		t.Errorf("status.scheduling = %+v", s)
	}
}

func TestGangScheduledFromPlacementAndSchedulerWords(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).Obj()
	first := planGang(job.DeepCopy(), nil, &Gang{Backend: musterv1.GangNative, MinAvailable: 2, Exists: true, State: gang.State{Admitted: true}})
	job.Status = first.Status
	pods := make([]*corev1.Pod, 0, 2)
	for _, p := range first.CreatePods {
		p.UID = types.UID("uid-" + p.Name)
		pods = append(pods, p)
	}
	pods[0].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes: insufficient nvidia.com/gpu"}}
	in := &Gang{Backend: musterv1.GangNative, MinAvailable: 2, Exists: true, State: gang.State{Admitted: true}}
	res := planGang(job.DeepCopy(), pods, in)
	if c := gangCondition(res); c == nil || c.Reason != string(musterv1.ReasonGangUnschedulable) || c.Message != "0/1 nodes: insufficient nvidia.com/gpu" {
		t.Errorf("unschedulable member: condition %+v", c)
	}
	for _, p := range pods {
		p.Status.Conditions = nil
		p.Spec.NodeName = "n1"
	}
	res = planGang(job.DeepCopy(), pods, in)
	if c := gangCondition(res); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("whole gang bound: condition %+v", c)
	}
	// Once placed, a member's replacement waiting for a node does not
	// make the gang unplaced again.
	job.Status = res.Status
	pods[1].Spec.NodeName = ""
	if c := gangCondition(planGang(job.DeepCopy(), pods, in)); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("after placement: condition %+v", c)
	}
}

// preempt marks a running pod the way a scheduler preempts it: a
// DisruptionTarget condition, then a graceful deletion.
func (w *world) preempt(name, scheduler string) {
	p := w.pods[name]
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonPreemptionByScheduler, Message: scheduler + ": preempting to accommodate a higher priority pod"})
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.NewTime(w.now.Add(30*time.Second))), new(int64(30))
}

// A member a scheduler preempts (condition, then deletion) ends the
// attempt at once, while the pod is still terminating: the gang restarts
// whole, classified by the condition (PodDisrupted, not charged), not by
// the pod's later absence, and is counted once.
func TestPreemptedGangMemberRestartsTheGangAtOnce(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 3).RestartScope(musterv1.RestartScopeJob).Obj()
	job.Status.Scheduling = &musterv1.SchedulingStatus{Backend: musterv1.GangVolcano}
	w := newWorld(t, job)
	w.runAll()
	w.preempt("j-w-1", "volcano")
	res := w.step()
	if w.job.Status.Attempt != 1 {
		t.Fatalf("attempt %d: the preempted member did not restart the gang while it terminates", w.job.Status.Attempt)
	}
	if got := w.job.Status.Restarts; got.Total != 1 || got.Accountable != 0 {
		t.Errorf("restarts %+v: want one, not charged", got)
	}
	c := w.job.Status.Attempts[0].Completion
	if c == nil || !strings.Contains(c.Message, "j-w-1 ended") || !strings.Contains(c.Message, corev1.PodReasonPreemptionByScheduler) {
		t.Errorf("attempt 0 ended with %+v: want the member and its preemption", c)
	}
	// The rest of the gang goes; the victim's own deletion runs its course.
	var deleted []string
	for _, d := range res.DeletePods {
		deleted = append(deleted, d.Name)
	}
	if slices.Contains(deleted, "j-w-1") || !slices.Contains(deleted, "j-w-0") || !slices.Contains(deleted, "j-w-2") {
		t.Errorf("deleted %v: want the other members, and the victim left to its deletion", deleted)
	}
	w.step()
	if got := w.job.Status.Restarts; w.job.Status.Attempt != 1 || got.Total != 1 {
		t.Errorf("attempt %d, restarts %+v after the next plan: counted twice", w.job.Status.Attempt, got)
	}
}

// Without a gang, a preempted task is replaced: it is Restarting at once,
// its last exit the disruption, and the replacement comes once the
// preempted pod is gone.
func TestPreemptedTaskIsClassifiedByItsDisruption(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("u").Role("w", 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	w.runAll()
	w.preempt("j-w-0", "default-scheduler")
	res := w.step()
	exit := w.task("w", 0).LastExit
	if exit == nil || exit.Reason != corev1.PodReasonPreemptionByScheduler || exit.CompletionCode != failure.CodePodDisrupted ||
		!slices.Contains(exit.Attributes, string(failure.AttributeTransient)) || exit.Message != "default-scheduler: preempting to accommodate a higher priority pod" {
		t.Fatalf("last exit %+v: want the disruption, PodDisrupted, Transient", exit)
	}
	if st := w.task("w", 0).State; st != musterv1.TaskRestarting {
		t.Errorf("task state %s, want Restarting", st)
	}
	if got := res.Status.Restarts; got.Total != 1 || got.Accountable != 0 {
		t.Errorf("restarts %+v: want one, not charged", got)
	}
	if len(res.CreatePods) != 0 {
		t.Fatal("a replacement was made while the preempted pod holds the name")
	}
	res = w.step()
	if len(res.CreatePods) != 0 || res.Status.Restarts.Total != 1 {
		t.Fatalf("while it terminates: %d creates, restarts %+v", len(res.CreatePods), res.Status.Restarts)
	}
	delete(w.pods, "j-w-0")
	res = w.step()
	if len(res.CreatePods) != 1 || res.CreatePods[0].Name != "j-w-0" || res.Status.Restarts.Total != 1 {
		t.Fatalf("once gone: %d creates, restarts %+v; want the replacement, counted once", len(res.CreatePods), res.Status.Restarts)
	}
}

// A gang job restarts as a whole when a member must be replaced, and a
// preempted member is not charged to the budget.
func TestGangMemberLossRestartsTheGang(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("u").Role("w", 2).RestartScope(musterv1.RestartScopeJob).Obj()
	job.Status.Scheduling = &musterv1.SchedulingStatus{Backend: musterv1.GangNative}
	w := newWorld(t, job)
	w.step()
	for _, p := range w.pods {
		p.Status.Phase = corev1.PodRunning
	}
	w.step()
	var victim *corev1.Pod
	for _, p := range w.pods {
		victim = p
		break
	}
	victim.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Preempting",
		Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}}}
	attempt := w.job.Status.Attempt
	w.step()
	if w.job.Status.Attempt != attempt+1 {
		t.Errorf("attempt %d -> %d: a lost gang member restarts the whole job", attempt, w.job.Status.Attempt)
	}
	if w.job.Status.Restarts.Accountable != 0 {
		t.Errorf("a preempted member is charged: %+v", w.job.Status.Restarts)
	}
}
