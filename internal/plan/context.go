package plan

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// planContext is what every phase of a plan reads and none changes: the
// job as it runs, the clock, how failures are classified, and the pods as
// observed.
type planContext struct {
	job *musterv1.TrainingJob
	now metav1.Time
	// policy is the job's failure policy; classifier is set only for a
	// job that runs, once its spec is known to be valid.
	policy     failure.Policy
	classifier failure.Classifier
	pods       observe.Pods
	// endsLater are the pods whose end this plan left to the next
	// (maxEndsPerPlan), or waits for (awaitFinalReports): they stay held
	// by the tracking finalizer until a written status holds their end.
	// Shared by the context's copies.
	endsLater map[types.UID]bool
	// inPlace is what the operator offers for restarts in place; gang is
	// whether the job has a gang backend.
	inPlace InPlaceSupport
	gang    bool
	// backend is the gang backend in force, None for none.
	backend musterv1.GangBackend
	// cache holds what the plan works out once, when first needed.
	// Shared by the context's copies.
	cache *planCache
}

// planCache is what a plan works out once, when first needed.
type planCache struct {
	// placeholders: whether a role's template names an attempt.
	placeholders map[string]bool
	// final are the exit codes the job's classification makes Permanent.
	final []int32
}

func newContext(job *musterv1.TrainingJob, now time.Time, pods []*corev1.Pod, status *musterv1.TrainingJobStatus) *planContext {
	taskCount := func(role string) int { return len(tasksOf(status, role)) }
	return &planContext{
		job:       job,
		now:       metav1.NewTime(now),
		policy:    failure.PolicyOf(job),
		pods:      observe.Sort(job, status.Attempt, taskCount, pods),
		endsLater: map[types.UID]bool{},
		cache:     &planCache{placeholders: map[string]bool{}},
	}
}

// withClassifier is the context with the job's failure classifier, for a
// job that runs. An invalid spec has none; validate fails such a job
// before anything is classified.
func (c *planContext) withClassifier() *planContext {
	out := *c
	out.classifier, _ = failure.ClassifierFor(c.job)
	return &out
}

// workingStatus is the status a plan starts from and changes: the one last
// written, with one task per index. It shares with the input only what the
// plan replaces rather than changes in place (task exits, timestamps, the
// autoscaler's record), so the input stays as it was without a deep copy.
func workingStatus(job *musterv1.TrainingJob, in *musterv1.TrainingJobStatus) *musterv1.TrainingJobStatus {
	st := *in
	st.ObservedGeneration = job.Generation
	st.Conditions = slices.Clone(in.Conditions)
	st.Attempts = slices.Clone(in.Attempts)
	st.Roles = slices.Clone(in.Roles)
	if in.Elastic != nil {
		st.Elastic = new(*in.Elastic)
	}
	if in.Scheduling != nil {
		st.Scheduling = new(*in.Scheduling)
	}
	expandTasks(job, &st)
	return &st
}

// jobDecision is what happens next to the whole job, as decided so far in
// a plan: an outcome that ends the attempt, or a restart of the whole job.
// Once either is set, later decisions of the same plan only record what
// they see. (A task's own is a failure.Decision.)
type jobDecision struct {
	outcome *Outcome
	restart *jobRestart
}

// decided is whether the job is already ending or restarting.
func (v jobDecision) decided() bool { return v.outcome != nil || v.restart != nil }

// fail ends the job as Failed, unless an outcome was decided first.
func (v jobDecision) fail(c musterv1.CompletionStatus) jobDecision {
	if v.outcome == nil {
		v.outcome = &Outcome{Completion: c}
	}
	return v
}

// failForGood ends the job as Failed with no retry of any kind.
func (v jobDecision) failForGood(c musterv1.CompletionStatus) jobDecision {
	v = v.fail(c)
	o := *v.outcome
	o.NoRetry = true
	v.outcome = &o
	return v
}
