package plan

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/text"
)

// Gang is the job's gang as the controller observed it before the plan.
type Gang struct {
	// Backend is the backend in force (gang.Resolve).
	Backend musterv1.GangBackend
	// Attempt is the attempt whose gang object was looked for (the one
	// placing the job's current attempt, gang.Placing), and MinAvailable
	// the gang's size.
	Attempt      int32
	MinAvailable int32
	// Exists is whether that attempt's gang object exists, and State what
	// its scheduler says of it.
	Exists bool
	State  gang.State
	// Blocked says why the gang object cannot be made (its backend is not
	// enabled in this operator, or its create was refused); Reason is the
	// condition reason to show.
	Blocked       string
	BlockedReason musterv1.ConditionReason
}

// applyGang holds the attempt's pods until its gang object exists and its
// scheduler lets them in, and says in the GangScheduled condition where the
// gang stands. It runs on the finished plan: whatever else the plan
// decided stands, only the creates wait.
func applyGang(g *Gang, job *musterv1.TrainingJob, pods []*corev1.Pod, res *Result, now metav1.Time) {
	if g == nil {
		return
	}
	st := &res.Status
	if st.Scheduling == nil {
		st.Scheduling = &musterv1.SchedulingStatus{}
	}
	st.Scheduling.Backend = g.Backend
	if g.Backend == musterv1.GangNone || isFinished(st) || st.IsTrue(musterv1.ConditionSuspended) {
		return
	}
	placing := gang.Placing(job.Name, st)
	name := gang.GroupName(job.Name, placing)
	placed := st.IsTrue(musterv1.ConditionGangScheduled) && st.Scheduling.PodGroup == name
	st.Scheduling.PodGroup, st.Scheduling.MinAvailable = name, g.MinAvailable
	set := func(ok bool, reason musterv1.ConditionReason, msg string) {
		c := metav1.Condition{Type: string(musterv1.ConditionGangScheduled), Status: metav1.ConditionFalse,
			Reason: string(reason), Message: text.Head(msg, maxMessageLen), ObservedGeneration: job.Generation, LastTransitionTime: now}
		if ok {
			c.Status = metav1.ConditionTrue
		}
		apimeta.SetStatusCondition(&st.Conditions, c)
	}
	switch {
	case g.Blocked != "":
		res.CreatePods = nil
		set(false, g.BlockedReason, g.Blocked)
		return
	case !g.Exists || g.Attempt != placing:
		res.CreatePods = nil
		set(false, musterv1.ReasonGangPending, fmt.Sprintf("creating %s gang object %s", g.Backend, name))
		return
	case !g.State.Admitted:
		res.CreatePods = nil
		set(false, orDefault(musterv1.ConditionReason(g.State.Reason), musterv1.ReasonGangQueued), orDefault(g.State.Message, "waiting for the scheduler to admit "+name))
		return
	}
	if placed {
		return
	}
	bound, why := placement(pods, st.Attempt)
	switch {
	case bound >= g.MinAvailable || (g.State.Scheduled != nil && *g.State.Scheduled):
		set(true, musterv1.ReasonGangScheduled, fmt.Sprintf("%s placed the gang of %d (%s)", g.Backend, g.MinAvailable, name))
	case why != "":
		set(false, musterv1.ReasonGangUnschedulable, why)
	case g.State.Scheduled != nil && g.State.Message != "":
		set(false, orDefault(musterv1.ConditionReason(g.State.Reason), musterv1.ReasonGangUnschedulable), g.State.Message)
	default:
		set(false, musterv1.ReasonGangPending, fmt.Sprintf("%d of the gang's %d tasks placed", bound, g.MinAvailable))
	}
}

// placement counts the attempt's task pods bound to a node, and gives the
// scheduler's word on one that cannot be placed.
func placement(pods []*corev1.Pod, attempt int32) (bound int32, unschedulable string) {
	want := fmt.Sprint(attempt)
	// In name order, so the message shown does not depend on list order.
	for _, pod := range slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }) {
		if pod.Labels[musterv1.LabelComponent] != "" || pod.Labels[musterv1.LabelJobAttempt] != want || pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Spec.NodeName != "" {
			bound++
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && unschedulable == "" {
				unschedulable = c.Message
			}
		}
	}
	return bound, unschedulable
}

func orDefault[T ~string](s, def T) T {
	if s == "" {
		return def
	}
	return s
}
