package plan

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/policy"
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
	// CreateFailures are the creates the API server refused when the
	// previous plan was acted on.
	CreateFailures []CreateFailure
	// Gang is the job's gang as observed; nil plans without one.
	Gang *Gang
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
	Reason  string
	Message string
}

// Result is the status to write and the actions to take once it is written.
type Result struct {
	Status        musterv1.TrainingJobStatus
	CreateService *corev1.Service
	CreatePods    []*corev1.Pod
	DeletePods    []PodDeletion
	DeleteJob     bool
	// SuspendJob sets spec.run.suspend, as a failure rule asked.
	SuspendJob bool
	// Scale resizes the scalable roles through the /scale subresource, as
	// the autoscaler decided.
	Scale  *int32
	Events []Event
	// RequeueAfter is when the plan changes by the clock alone (a deadline,
	// a TTL), or zero.
	RequeueAfter time.Duration
}

type planner struct {
	job        *musterv1.TrainingJob
	status     *musterv1.TrainingJobStatus
	now        metav1.Time
	classifier policy.Classifier
	classify   bool
	// restart is a restart of the whole job decided in this plan.
	restart *jobRestart
	// roleRestarts are roles a policy restarts, decided in this plan.
	roleRestarts map[string]string
	pods         map[string]*corev1.Pod // current-attempt pods by name
	strays       map[string]bool        // names still held by pods being removed
	all          []*corev1.Pod
	hasSvc       bool
	outcome      *Outcome
	waiting      []string  // roles held back by dependsOn, for the Running condition
	ends         int       // pod ends recorded in this plan, at most maxEndsPerPlan
	scaling      int32     // new tasks of a growing running job, for the Running condition
	blocked      []blocked // objects the cluster refused to create, for the Running condition
	delayed      bool      // a new attempt waits out a conflict delay
	// store is the job's rendezvous store pod, if any; storeReady once it
	// runs; waitingForStore when a task waited for it in this plan.
	store           *corev1.Pod
	storeReady      bool
	waitingForStore bool
	res             Result
}

// Plan decides what to do next for a job.
func Plan(in Input) Result {
	job := topology.Effective(in.Job)
	p := &planner{
		job:    job,
		status: in.Job.Status.DeepCopy(),
		now:    metav1.NewTime(in.Now),
		all:    in.Pods,
		hasSvc: in.HasService,
		pods:   map[string]*corev1.Pod{},
		strays: map[string]bool{},

		classify:     classifies(job),
		roleRestarts: map[string]string{},
	}
	p.status.ObservedGeneration = in.Job.Generation
	expandTasks(job, p.status)
	// The plan depends on which pods exist, never on the order they were
	// listed in.
	p.all = slices.SortedFunc(slices.Values(in.Pods), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	p.indexPods()
	p.attachPods()

	switch {
	case isFinished(p.status):
		p.cleanUp()
		p.expireTTL()
	case p.job.Spec.Run.Execution == musterv1.ExecutionStop:
		p.stop()
	case p.job.Spec.Run.Execution == musterv1.ExecutionCreate:
		p.hold()
	case ptr.Deref(p.job.Spec.Run.Suspend, false):
		p.ensureService()
		p.suspend()
	case p.pendingSuspend():
		p.ensureService()
		p.res.SuspendJob = true
	default:
		p.ensureService()
		p.resume()
		p.createFailures(in.CreateFailures)
		p.run()
		if !isFinished(p.status) && p.restart == nil {
			p.autoscale(in.Throughput)
		}
	}
	p.summarize()
	p.scaleStatus()
	// The summary replaces each role's task list, so the roles need copying
	// and nothing else does.
	p.res.Status = *p.status
	p.res.Status.Roles = slices.Clone(p.status.Roles)
	p.summarizeTasks(&p.res.Status)
	applyGang(in.Gang, in.Job, p.all, &p.res, p.now)
	return p.res
}

// indexPods sorts the observed pods into the current attempt's tasks and
// strays: pods of another attempt, of a role no longer in the spec, or of an
// index beyond the role's replicas.
func (p *planner) indexPods() {
	// A role's pods up to the last task in status are the tasks' own, even
	// beyond replicas: scale-down tasks are deleted by the rescale logic.
	replicas := map[string]int32{}
	for _, r := range p.job.Spec.Roles {
		replicas[r.Name] = max(topology.Replicas(&r), int32(len(tasksOf(p.status, r.Name))))
	}
	for _, pod := range p.all {
		if pod.Labels[musterv1.LabelComponent] == musterv1.ComponentStore {
			if pod.Name == objects.StorePodName(p.job) && pod.Labels[musterv1.LabelJobAttempt] == strconv.Itoa(int(p.status.Attempt)) {
				p.store = pod
			} else {
				p.strays[pod.Name] = true
				p.deletePod(pod, "stray")
			}
			continue
		}
		n, known := replicas[pod.Labels[musterv1.LabelRole]]
		idx, err := strconv.Atoi(pod.Labels[musterv1.LabelTaskIndex])
		stray := !known || err != nil || int32(idx) >= n ||
			pod.Labels[musterv1.LabelJobAttempt] != strconv.Itoa(int(p.status.Attempt))
		if stray {
			p.strays[pod.Name] = true
			if pod.DeletionTimestamp != nil {
				p.forceIfOverdue(pod, topology.Find(p.job, pod.Labels[musterv1.LabelRole]))
			}
			p.deletePod(pod, "stray")
			continue
		}
		p.pods[pod.Name] = pod
	}
}

func (p *planner) ensureService() {
	if !p.hasSvc {
		p.res.CreateService = objects.DesiredService(p.job)
	}
	if !p.status.IsTrue(musterv1.ConditionCreated) {
		p.setCondition(musterv1.ConditionCreated, true, musterv1.ReasonCreated, "the job was accepted and its Service made")
	}
}

// run syncs every task, then checks the deadline and the completion rules.
func (p *planner) run() {
	if p.status.StartTime == nil {
		p.status.StartTime = new(p.now)
	}
	if !p.validate() {
		p.finish()
		return
	}
	p.checkDeadline()
	p.delayed = p.holdForDelay()
	p.syncStore()
	roles := make([]musterv1.RoleStatus, 0, len(p.job.Spec.Roles))
	for i := range p.job.Spec.Roles {
		rs := p.syncRole(&p.job.Spec.Roles[i], roles)
		p.roleEvents(&p.job.Spec.Roles[i], &rs)
		roles = append(roles, rs)
	}
	p.status.Roles = roles
	p.applyRoleRestarts()
	p.gangEvents(roles)
	p.checkElasticSize(roles)
	if p.restart != nil && p.outcome == nil {
		p.newAttempt()
		return
	}
	if p.outcome == nil {
		p.outcome = EvaluateCompletion(p.job, p.status.Roles)
	}
	if p.outcome != nil && !p.retry() {
		p.finish()
	}
}

func (p *planner) checkDeadline() {
	d := p.job.Spec.Run.ActiveDeadlineSeconds
	if d == 0 || p.outcome != nil {
		return
	}
	deadline := p.status.StartTime.Add(time.Duration(d) * time.Second)
	if left := deadline.Sub(p.now.Time); left > 0 {
		p.requeue(left)
		return
	}
	p.fail(musterv1.CompletionStatus{
		Reason:  musterv1.ReasonDeadlineExceeded,
		Message: "the job was active longer than spec.run.activeDeadlineSeconds (" + strconv.FormatInt(d, 10) + "s)",
	})
}

// syncRole syncs the tasks of one role. done holds the roles synced
// before it, which are the only ones it may depend on.
func (p *planner) syncRole(role *musterv1.Role, done []musterv1.RoleStatus) musterv1.RoleStatus {
	old := roleStatus(p.status, role.Name)
	replicas := topology.Replicas(role)
	size := max(replicas, int32(len(tasksOf(p.status, role.Name))))
	rs := musterv1.RoleStatus{Name: role.Name, Replicas: replicas, Tasks: make([]musterv1.TaskStatus, 0, size)}
	waitFor := unmetDependency(role, done)
	if waitFor != "" {
		p.waiting = append(p.waiting, "role "+role.Name+" waits for "+waitFor)
	}
	for i := int32(0); i < size; i++ {
		ts := taskStatus(old, i)
		ts.Pod = objects.PodName(p.job.Name, role.Name, i)
		switch {
		case i >= replicas || (ts.DeletionPending && p.pods[ts.Pod] != nil):
			// Scaled down, or scaled down and back up before the old
			// instance was gone: it goes before its index is reused.
			p.scaleDown(role, &ts)
		case ts.DeletionPending:
			// Its pod is gone: a new instance takes the index.
			ts = musterv1.TaskStatus{Index: i, Pod: ts.Pod, State: musterv1.TaskCreating}
			p.syncTask(role, &ts)
		case waitFor != "" && ts.Attempts == 0 && p.pods[ts.Pod] == nil:
			// Held back until its dependencies are met; a task that has
			// already run is replaced as usual.
			ts.State = musterv1.TaskCreating
		default:
			p.syncTask(role, &ts)
		}
		rs.Tasks = append(rs.Tasks, ts)
	}
	rs.Tasks = compact(rs.Tasks, replicas, p.pods)
	return rs
}

// syncTask moves one task along its state machine. See
// docs/state-machine.md.
func (p *planner) syncTask(role *musterv1.Role, ts *musterv1.TaskStatus) {
	ts.Pod = objects.PodName(p.job.Name, role.Name, ts.Index)
	pod := p.pods[ts.Pod]
	final := ts.State == musterv1.TaskSucceeded || ts.State == musterv1.TaskFailed
	if pod != nil && pod.UID != ts.PodUID && !isEnded(ts, pod.UID) && !final {
		// A pod made for this task that status does not know yet.
		ts.PodUID = pod.UID
		ts.Attempts = max(ts.Attempts, podTaskAttempt(pod))
	}
	switch {
	case final:
		return
	case pod == nil:
		p.syncMissingPod(role, ts)
	case pod.DeletionTimestamp != nil:
		// Being deleted, by us or someone else: wait until it is gone, or
		// force it once the role's graceful deletion timeout has passed.
		p.forceIfOverdue(pod, role)
	case isEnded(ts, pod.UID):
		// The ended instance a restart was decided for: remove it, then
		// make its replacement once it is gone.
		p.deletePod(pod, "restart")
	case pod.Status.Phase == corev1.PodRunning:
		ts.State = musterv1.TaskRunning
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		if p.mayEnd() {
			p.ended(role, ts, pod, ExitOf(pod, p.classifier))
		}
	default:
		if ts.State != musterv1.TaskRestarting {
			ts.State = musterv1.TaskPending
		}
		p.checkPending(role, ts, pod)
	}
}

func (p *planner) syncMissingPod(role *musterv1.Role, ts *musterv1.TaskStatus) {
	switch ts.State {
	case musterv1.TaskPending, musterv1.TaskRunning:
		if ts.PodUID != "" {
			if p.mayEnd() {
				p.ended(role, ts, nil, VanishedExit(p.now.Time, p.classifier))
			}
			return
		}
	case musterv1.TaskRestarting:
	default:
		ts.State = musterv1.TaskCreating
	}
	p.createPod(role, ts)
}

// ended applies the lifecycle policies, or else the role's restart policy,
// to a pod that ended, or to a task whose pod vanished (pod nil).
func (p *planner) ended(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod, exit musterv1.ExitStatus) {
	exit.PodUID = ts.PodUID
	ts.LastExit = &exit
	end := endOf(ts, pod, exit)
	if p.outcome != nil || p.restart != nil {
		// The job is already ending or restarting in this plan.
		p.settle(ts, end.Succeeded)
		return
	}
	d := DecideEnd(p.job, role, end)
	p.act(d.Action, failureCase{role: role, task: ts, pod: pod, accountable: d.Accountable, why: d.Why, reason: d.Reason})
}

// settle makes a task's end final.
func (p *planner) settle(ts *musterv1.TaskStatus, succeeded bool) {
	if succeeded {
		ts.State = musterv1.TaskSucceeded
		return
	}
	ts.State = musterv1.TaskFailed
	p.event(true, musterv1.ReasonTaskFailed, ts.Pod+" failed: "+describeExit(*ts.LastExit))
}

// restartTask replaces one task's pod, if the task and the job have
// restarts left.
func (p *planner) restartTask(role *musterv1.Role, ts *musterv1.TaskStatus, pod *corev1.Pod, accountable bool) {
	exit := *ts.LastExit
	if perTask := p.job.Spec.FailurePolicy.BackoffLimitPerTask; accountable && perTask != nil && ts.AccountableRestarts >= *perTask {
		p.settle(ts, false)
		p.event(true, musterv1.ReasonTaskRetriesExhausted, ts.Pod+" used all "+strconv.Itoa(int(*perTask))+" restarts of spec.failurePolicy.backoffLimitPerTask")
		p.taskFailedRule(role, ts)
		return
	}
	if accountable && p.status.Restarts.Accountable >= backoffLimit(p.job) {
		ts.State = musterv1.TaskFailed
		p.fail(taskCompletion(musterv1.ReasonBackoffLimitExceeded,
			ts.Pod+" failed ("+describeExit(exit)+") and the job has used all "+
				strconv.Itoa(int(backoffLimit(p.job)))+" restarts of spec.failurePolicy.backoffLimit",
			role.Name, ts))
		p.outcome.NoRetry = true
		return
	}
	ts.State = musterv1.TaskRestarting
	ts.Restarts++
	p.status.Restarts.Total++
	if accountable {
		ts.AccountableRestarts++
		p.status.Restarts.Accountable++
	}
	p.event(false, musterv1.ReasonTaskRestarting, "restarting "+ts.Pod+" after "+describeExit(exit))
	if pod != nil {
		p.deletePod(pod, "restart")
	} else {
		p.createPod(role, ts)
	}
}

func (p *planner) createPod(role *musterv1.Role, ts *musterv1.TaskStatus) {
	if p.outcome != nil || p.strays[ts.Pod] || p.delayed {
		// A finished job makes nothing; a name still held by a stray pod is
		// reused once that pod is gone.
		return
	}
	if p.waitsForStore(role) {
		p.waitingForStore = true
		return
	}
	pod, err := objects.DesiredPod(p.job, role, ts.Index, ts.Attempts+1)
	if err != nil {
		p.fail(musterv1.CompletionStatus{Reason: musterv1.ReasonPodCreateFailed, Message: err.Error(), Role: role.Name})
		return
	}
	p.res.CreatePods = append(p.res.CreatePods, pod)
}

func (p *planner) deletePod(pod *corev1.Pod, reason string) {
	if pod.DeletionTimestamp != nil {
		return
	}
	for _, d := range p.res.DeletePods {
		if d.UID == pod.UID {
			return
		}
	}
	p.res.DeletePods = append(p.res.DeletePods, PodDeletion{Name: pod.Name, UID: pod.UID, Reason: reason})
}

func (p *planner) fail(c musterv1.CompletionStatus) {
	if p.outcome == nil {
		p.outcome = &Outcome{Succeeded: false, Completion: c}
	}
}

// failForGood ends the job as Failed with no retry of any kind.
func (p *planner) failForGood(c musterv1.CompletionStatus) {
	p.fail(c)
	p.outcome.NoRetry = true
}

func (p *planner) event(warning bool, reason, msg string) {
	p.res.Events = append(p.res.Events, Event{Warning: warning, Reason: reason, Message: msg})
}

func (p *planner) requeue(d time.Duration) {
	if p.res.RequeueAfter == 0 || d < p.res.RequeueAfter {
		p.res.RequeueAfter = d
	}
}

// isEnded is whether uid is the pod instance the task's last exit was
// recorded for.
func isEnded(ts *musterv1.TaskStatus, uid types.UID) bool {
	return ts.LastExit != nil && ts.LastExit.PodUID != "" && ts.LastExit.PodUID == uid
}

func podTaskIndex(pod *corev1.Pod) int32 {
	n, _ := strconv.Atoi(pod.Labels[musterv1.LabelTaskIndex])
	return int32(n)
}

func podTaskAttempt(pod *corev1.Pod) int32 {
	n, _ := strconv.Atoi(pod.Labels[musterv1.LabelTaskAttempt])
	return int32(n)
}

func backoffLimit(job *musterv1.TrainingJob) int32 {
	return ptr.Deref(job.Spec.FailurePolicy.BackoffLimit, musterv1.DefaultBackoffLimit)
}

func taskCompletion(reason, msg, role string, ts *musterv1.TaskStatus) musterv1.CompletionStatus {
	c := musterv1.CompletionStatus{Reason: reason, Message: msg, Role: role, Index: new(ts.Index)}
	inheritExit(&c, ts.LastExit)
	return c
}

// inheritExit copies a triggering task's exit into the job's completion.
func inheritExit(c *musterv1.CompletionStatus, e *musterv1.ExitStatus) {
	if e == nil {
		return
	}
	c.ExitCode = new(e.Code)
	c.Code = new(e.CompletionCode)
	c.Phrase = e.Phrase
	c.Attributes = append([]string(nil), e.Attributes...)
	c.Diagnostics = e.Diagnostics
}

func describeExit(e musterv1.ExitStatus) string {
	s := "exit code " + strconv.Itoa(int(e.Code))
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

func roleStatus(s *musterv1.TrainingJobStatus, name string) *musterv1.RoleStatus {
	for i := range s.Roles {
		if s.Roles[i].Name == name {
			return &s.Roles[i]
		}
	}
	return nil
}

func tasksOf(s *musterv1.TrainingJobStatus, role string) []musterv1.TaskStatus {
	if rs := roleStatus(s, role); rs != nil {
		return rs.Tasks
	}
	return nil
}

func taskStatus(rs *musterv1.RoleStatus, index int32) musterv1.TaskStatus {
	// Expanded tasks are one per index, in order: look where it should be
	// first.
	if rs != nil && int(index) < len(rs.Tasks) && rs.Tasks[index].Index == index {
		return *rs.Tasks[index].DeepCopy()
	}
	if rs != nil {
		for _, t := range rs.Tasks {
			if t.Index == index {
				return *t.DeepCopy()
			}
		}
	}
	return musterv1.TaskStatus{Index: index, State: musterv1.TaskCreating}
}

// podEnded is whether the pod's containers have all stopped for good.
func podEnded(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// currentPods are the current attempt's pods in name order, so that a plan
// lists its actions in the same order every time.
func (p *planner) currentPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(p.pods))
	for _, pod := range p.pods {
		out = append(out, pod)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// maxEndsPerPlan bounds the pod ends one plan records. A task being
// restarted keeps its ended pod's UID and exit in status until that pod is
// gone; recording at most this many at a time keeps status small when a
// whole job's pods end at once. The rest keep their state and are recorded
// by the next plan, at once.
const maxEndsPerPlan = 500

// mayEnd is whether this plan may record one more pod end.
func (p *planner) mayEnd() bool {
	if p.ends >= maxEndsPerPlan {
		p.requeue(time.Millisecond)
		return false
	}
	p.ends++
	return true
}
