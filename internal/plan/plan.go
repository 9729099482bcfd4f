package plan

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Input is everything a plan is computed from.
type Input struct {
	// Job is the job as last seen, with the status the operator last wrote.
	Job *musterv1.TrainingJob
	// Pods are the job's pods: labelled with its name and controlled by it.
	Pods []*corev1.Pod
	// HasService is whether the job's Service exists.
	HasService bool
	// Now is the time of the plan.
	Now time.Time
	// Throughput is a sample the controller read for the autoscaler, when
	// one was due (see SampleDue).
	Throughput *Throughput
	// Progress is what the controller read of the job's training
	// progress, when a read was due; nil otherwise.
	Progress *ProgressRead
	// CreateFailures are the creates the API server refused when the
	// previous plan was acted on.
	CreateFailures []CreateFailure
	// Gang is the job's gang as observed; nil plans without one.
	Gang *Gang
	// Admission is the job's admission by a queue manager (Kueue); nil
	// for a job no queue manager holds.
	Admission *Admission
	// TensorBoard is the job's TensorBoard as observed.
	TensorBoard TensorBoard
	// SSHSecret is the name of the SSH Secret the controller made for an
	// MPI job, when the job's status does not name it yet: the API server
	// chose it, and nothing the operator may read in the cluster tells it.
	SSHSecret string
	// InPlace is what the operator offers for restarting pods in place.
	InPlace InPlaceSupport
}

// PodDeletion asks for one pod instance to be deleted.
type PodDeletion struct {
	Name   string
	UID    types.UID
	Reason string
	// Force deletes with grace period 0: the pod is gone from the API at
	// once, whether or not its process has stopped.
	Force bool
}

// Event is a decision a user will want to see in `kubectl describe`.
type Event struct {
	Warning bool
	Reason  musterv1.EventReason
	Message string
}

// Result is the status to write and the actions to take once it is written.
type Result struct {
	Status        musterv1.TrainingJobStatus
	CreateService *corev1.Service
	// CreateSSHSecret is the SSH Secret of an MPI job to create, without
	// its keys (the controller generates them) and without a name (the
	// API server picks one). The controller tells the next plan the name,
	// which records it in status before any pod mounts it.
	CreateSSHSecret *corev1.Secret
	CreatePods      []*corev1.Pod
	DeletePods      []PodDeletion
	// RestartPods are the pods to restart in place.
	RestartPods []PodRestart
	DeleteJob   bool
	// Scale resizes the scalable roles through the /scale subresource, as
	// the autoscaler decided.
	Scale  *int32
	Events []Event
	// RequeueAfter is when the plan changes by the clock alone (a deadline,
	// a TTL), or zero.
	RequeueAfter time.Duration
	// ReleasePods are the pods whose tracking finalizer may go once Status
	// is written: their end is in it.
	ReleasePods []PodRef
	// ReleaseAtOnce are pods this plan already took for gone
	// (observe.GoneOnRelease): a plan made after their release sees what
	// this one saw, so their finalizer may go before Status is written,
	// beside the write rather than after it.
	ReleaseAtOnce []PodRef
	// TensorBoard is what to do with the job's TensorBoard, or nothing.
	TensorBoard TensorBoardAction
	// Ended are the pod instances whose end this plan counted, in task
	// order.
	Ended []PodEnd
}

// PodEnd is one pod instance whose end a plan counted.
//
// A vanished one is a task whose pod the plan did not find. The pods a
// plan is given may be older than the status it starts from (an operator
// that has just started or taken over reads both from caches that fill
// apart), so a missing pod may only not be there yet: the controller
// confirms every vanished pod with the API server before it writes such a
// plan, as Kubernetes' Job controller confirms a pod's disappearance before
// it counts it.
type PodEnd struct {
	Name string
	// UID is the ended instance's, or empty when it vanished.
	UID types.UID
	// Attempt is which instance of its task it was (the task-attempt
	// label).
	Attempt int32
}

// Vanished is whether the pod's end is that it was not found.
func (e PodEnd) Vanished() bool { return e.UID == "" }

// Vanished are the ends of pods this plan did not find.
func (r Result) Vanished() []PodEnd {
	var out []PodEnd
	for _, e := range r.Ended {
		if e.Vanished() {
			out = append(out, e)
		}
	}
	return out
}

// PodRef names one pod instance.
type PodRef struct {
	Name string
	UID  types.UID
}

// Plan decides what to do next for a job. Its phases run in order, each
// taking what the earlier ones returned (see the package doc).
func Plan(in Input) Result {
	job := admittedSize(topology.Effective(in.Job), in.Admission)
	status := workingStatus(job, &in.Job.Status)
	// A pod that this plan's release removes at once is gone already as far
	// as its task goes (observe.GoneOnRelease); it is still released below.
	c := newContext(job, in.Now, present(in.Pods), status)
	c.inPlace = in.InPlace
	c.backend = musterv1.GangNone
	if in.Gang != nil && in.Gang.Backend != "" {
		c.backend = in.Gang.Backend
	}
	c.gang = c.backend != musterv1.GangNone
	attachPods(status, c.pods)
	var out Result
	removeStrays(c, status, &out)

	var held holdUps
	trainingProgressStep(c, status, in.Progress, &out)
	running := false
	restartRequested := takeRestartRequest(job, status)
	policyMsg, policyHeld := suspendedByPolicy(c, status)
	switch {
	case isFinished(status):
		cleanUp(c, status, &out)
		awaitFinalReports(c, status, &out)
		expireTTL(c, status, &out)
	case job.Spec.Run.Execution == musterv1.ExecutionStop:
		stop(c, status, &out)
	case job.Spec.Run.Execution == musterv1.ExecutionCreate:
		hold(c, status)
	case job.Spec.Run.Execution == musterv1.ExecutionSuspend:
		ensureService(c, status, in.HasService, &out)
		suspend(c, status, &out, musterv1.ReasonSuspended, "spec.run.execution is Suspend: the job has no pods")
	case in.Admission != nil && !in.Admission.Admitted:
		// A queue manager has not admitted the job, or took it back: it
		// waits like a suspended job, and nothing it loses is charged.
		ensureService(c, status, in.HasService, &out)
		suspend(c, status, &out, in.Admission.Reason, in.Admission.Message)
	case policyHeld:
		ensureService(c, status, in.HasService, &out)
		suspend(c, status, &out, musterv1.ReasonSuspendedByPolicy, policyMsg)
	default:
		running = true
		ensureService(c, status, in.HasService, &out)
		resume(c, status, &out)
		v, blocked := createFailures(in.CreateFailures, &out)
		if restartRequested && !v.decided() {
			v.restart = requestedRestart(job)
		}
		v, held = run(c.withClassifier(), status, v, &out)
		held.blocked = blocked
		awaitSSHSecret(c, in.Pods, in.SSHSecret, status, &out)
		if !isFinished(status) && v.restart == nil {
			autoscaleStep(c, status, in.Throughput, &out)
		}
	}
	if !running || isFinished(status) {
		// Only a running job stalls.
		apimeta.RemoveStatusCondition(&status.Conditions, string(musterv1.ConditionStalled))
	}
	tensorBoardStep(c, status, in.TensorBoard, in.CreateFailures, &out)
	summarizePhase(c, status, held)
	out = finalize(c, status, out)
	// The gang step runs on the finished plan: it only holds creates back
	// and says where the gang stands.
	applyGang(in.Gang, in.Job, in.Pods, &out, c.now)
	applyAdmission(in.Admission, &out)
	out.ReleasePods, out.ReleaseAtOnce = releasable(in.Pods, c.endsLater)
	finishStranded(in.Pods, &out)
	return out
}

// finishStranded deletes again every pod whose deletion without grace was
// cut off half way (observe.DeletionStranded): nothing else would.
func finishStranded(pods []*corev1.Pod, out *Result) {
	var stranded []PodDeletion
	for _, pod := range pods {
		if !observe.DeletionStranded(pod) || out.deletes(pod.UID) {
			continue
		}
		stranded = append(stranded, PodDeletion{Name: pod.Name, UID: pod.UID, Reason: DeleteReasonStranded, Force: true})
	}
	// In name order, so that the same pods give the same plan.
	slices.SortFunc(stranded, func(a, b PodDeletion) int { return strings.Compare(a.Name, b.Name) })
	out.DeletePods = append(out.DeletePods, stranded...)
}

// DeleteReasonStranded is the reason of a deletion asked again because
// the first stopped half way.
const DeleteReasonStranded = "deletion interrupted"

// releasable are the tracked pods whose end this plan has taken into
// account: every plan reads every pod of the job, so once its status is
// written, an ended or deleted pod need not be held any longer. The ends
// the plan left to the next (endsLater) are not in that status: their
// pods stay held, or one deleted meanwhile would be gone before its end is
// read, and taken for vanished.
//
// Those the plan took for gone already (observe.GoneOnRelease) come apart:
// their release changes nothing the next plan sees.
func releasable(pods []*corev1.Pod, endsLater map[types.UID]bool) (afterWrite, atOnce []PodRef) {
	for _, pod := range pods {
		switch {
		case observe.GoneOnRelease(pod):
			atOnce = append(atOnce, PodRef{Name: pod.Name, UID: pod.UID})
		case observe.Accountable(pod) && !endsLater[pod.UID]:
			afterWrite = append(afterWrite, PodRef{Name: pod.Name, UID: pod.UID})
		}
	}
	// In name order, so that the same pods give the same plan.
	byName := func(a, b PodRef) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(afterWrite, byName)
	slices.SortFunc(atOnce, byName)
	return afterWrite, atOnce
}

// present are the pods that stay once the plan's releases are done.
func present(pods []*corev1.Pod) []*corev1.Pod {
	if !slices.ContainsFunc(pods, observe.GoneOnRelease) {
		return pods
	}
	return slices.DeleteFunc(slices.Clone(pods), observe.GoneOnRelease)
}

// finalize completes the status the plan returns: the /scale fields, and
// each role's tasks in their short form.
func finalize(c *planContext, status *musterv1.TrainingJobStatus, out Result) Result {
	scaleStatus(c.job, status)
	out.Status = *status
	// The summary replaces each role's task list, so the roles need copying
	// and nothing else does.
	out.Status.Roles = slices.Clone(status.Roles)
	summarizeTasks(&out.Status)
	return out
}

// removeStrays deletes the pods that belong to no task of the current
// attempt, forcing those that overstay their role's graceful deletion
// timeout. A stray store pod is plumbing: it is only deleted. A task's pod
// of an earlier attempt that can restart in place is asked again to
// restart into this one: the plan that started the attempt asked it, and
// the pod does not show it yet.
func removeStrays(c *planContext, st *musterv1.TrainingJobStatus, out *Result) {
	for _, pod := range c.pods.Strays {
		if ts := earlierAttemptsTask(c, st, pod); ts != nil {
			if ok, _ := restartableInPlace(pod); ok {
				out.restartInPlace(pod, st.Attempt, nextInstance(ts, pod), "new attempt")
				continue
			}
		}
		if pod.DeletionTimestamp != nil && pod.Labels[musterv1.LabelComponent] != musterv1.ComponentStore {
			out.forceIfOverdue(pod, topology.Find(c.job, pod.Labels[musterv1.LabelRole]), c.now.Time)
		}
		out.deletePod(pod, "stray")
	}
}

// earlierAttemptsTask is the current attempt's task that pod, a stray,
// ran in an earlier attempt, if its role and index are still the job's.
// Earlier is a lower attempt label, never just another: a plan made from
// a job its cache shows a write behind sees the pods of a newer attempt,
// and must not ask them back into the one before.
func earlierAttemptsTask(c *planContext, st *musterv1.TrainingJobStatus, pod *corev1.Pod) *musterv1.TaskStatus {
	attempt, err := strconv.Atoi(pod.Labels[musterv1.LabelJobAttempt])
	if pod.Labels[musterv1.LabelComponent] != "" || err != nil || int64(attempt) >= int64(st.Attempt) {
		return nil
	}
	role := topology.Find(c.job, pod.Labels[musterv1.LabelRole])
	index := observe.TaskIndex(pod)
	if role == nil || index >= topology.Replicas(role) {
		return nil
	}
	rs := roleStatus(st, role.Name)
	if rs == nil {
		return nil
	}
	for i := range rs.Tasks {
		if t := &rs.Tasks[i]; t.Index == index {
			return t
		}
	}
	return nil
}
