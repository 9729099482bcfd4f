package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// The pod cache and the job cache are two watches, filled apart. While
// one operator runs, a job's status holds only what it planned from its
// own pod cache, and the expectations make it wait for its own pod writes;
// but an operator that has just started, or taken over from another
// replica, reads statuses another process wrote, and its pod cache may be
// older than them. Planned on such a cache, a task's running pod that the
// cache has yet to show reads as vanished, and an instance whose end is
// counted already (and whose exit the status no longer names) as one that
// has just ended: restarts that never happened, and ends counted twice.
//
// So, as Kubernetes' Job controller confirms a pod's disappearance with
// the API server before it counts it, the first plan of each job that
// would change anything after the operator starts, and every plan in
// which a task's pod vanished, is checked: the job's pods are listed from
// the API server, and if the cache shows other instances, or older states
// of them (a pod being deleted that the cache still shows running), the
// job waits for it instead of acting on the plan. Jobs that need no
// change after a start cost nothing; the rest, one list each.

// confirmedJobs are the jobs this process has checked its pod cache for,
// by name: a job made after the process started has no status but its own,
// so one that takes the name of a confirmed job needs no check either.
// It also counts, per job, the checks in a row that found the cache
// behind.
type confirmedJobs struct {
	mu    sync.Mutex
	jobs  map[types.NamespacedName]bool
	waits map[types.NamespacedName]int
}

// cacheWaitsToTell is how many checks in a row must find a job's pod cache
// behind before the job is told, once per run of them: a cache behind for
// one or two plans is the watch's ordinary lag.
const cacheWaitsToTell = 5

// behind counts a check of job's cache that found it behind, and returns
// how many checks in a row have; a confirmation (add) ends the run.
func (c *confirmedJobs) behind(job types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waits == nil {
		c.waits = map[types.NamespacedName]int{}
	}
	c.waits[job]++
	return c.waits[job]
}

func (c *confirmedJobs) has(job types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jobs[job]
}

func (c *confirmedJobs) add(job types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobs[job] = true
	delete(c.waits, job)
}

func (c *confirmedJobs) forget(job types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.jobs, job)
	delete(c.waits, job)
}

// samePlanned is whether two states of a pod are alike in all a plan
// reads of them: what the pod cache keeps (trimPod), but the
// resourceVersion.
func samePlanned(cached, live *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(plannedView(cached), plannedView(live))
}

func plannedView(pod *corev1.Pod) *corev1.Pod {
	trimmed, _ := trimPod(pod.DeepCopy())
	out := trimmed.(*corev1.Pod)
	out.ResourceVersion = ""
	return out
}

// cacheBehind is whether the plan must wait for the pod cache to catch up
// with the API server: it is checked when it needs to be (see above).
func (r *Reconciler) cacheBehind(ctx context.Context, job *musterv1.TrainingJob, cached []*corev1.Pod, res *plan.Result, now time.Time) (bool, error) {
	if !r.needsConfirming(job, res) {
		return false, nil
	}
	ok, err := r.confirmPods(ctx, job, cached, res.Vanished(), now)
	return !ok, r.accessLost(ctx, job, err)
}

// needsConfirming is whether the plan may be acted on only once the pod
// cache is known to show what the API server has (see above).
func (r *Reconciler) needsConfirming(job *musterv1.TrainingJob, res *plan.Result) bool {
	if len(res.Vanished()) > 0 {
		return true
	}
	key := client.ObjectKeyFromObject(job)
	if r.confirmed.has(key) {
		return false
	}
	if job.Status.ObservedGeneration == 0 {
		// No plan was ever written for it: every status it will have is
		// this process's own. It has no pods, or, when its start waited
		// for them to run (--status-batch-start), pods its status says
		// nothing of yet, which no cache can be older than.
		r.confirmed.add(key)
		return false
	}
	return len(res.Ended) > 0 || len(res.CreatePods) > 0 || len(res.DeletePods) > 0 || len(res.RestartPods) > 0 ||
		len(res.ReleasePods) > 0 || len(res.ReleaseAtOnce) > 0 || !equality.Semantic.DeepEqual(job.Status, res.Status)
}

// confirmPods lists the job's pods from the API server and reports whether
// the cached ones (cached) are the same instances, so the plan made from
// them may go on. Where they differ, it expects the cache to catch up, and
// the job waits for that (the expectations hold its next plans). A pod
// that vanished from the cache but is still the job's under its name has
// had its Muster labels changed (see restoreLabels).
func (r *Reconciler) confirmPods(ctx context.Context, job *musterv1.TrainingJob, cached []*corev1.Pod, vanished []plan.PodEnd, now time.Time) (bool, error) {
	var list corev1.PodList
	if err := r.opts.APIReader.List(ctx, &list, client.InNamespace(job.Namespace),
		client.MatchingLabels{musterv1.LabelJobName: job.Name}); err != nil {
		return false, fmt.Errorf("listing the job's pods: %w", err)
	}
	inCache := make(map[types.UID]bool, len(cached))
	for _, p := range cached {
		inCache[p.UID] = true
	}
	// live holds each pod as the API server has it now: the list is a
	// consistent read, so a cached pod with another resourceVersion is an
	// older state of it.
	live := make(map[types.UID]*corev1.Pod, len(list.Items))
	liveNames := make(map[string]bool, len(list.Items))
	var appear []plan.PodRef
	for i := range list.Items {
		p := &list.Items[i]
		if !metav1.IsControlledBy(p, job) {
			continue
		}
		live[p.UID], liveNames[p.Name] = p, true
		if !inCache[p.UID] {
			appear = append(appear, plan.PodRef{Name: p.Name, UID: p.UID})
		}
	}
	var leave []types.UID
	older := 0
	for _, p := range cached {
		now, ok := live[p.UID]
		switch {
		case !ok:
			leave = append(leave, p.UID)
		case now.ResourceVersion != p.ResourceVersion && !samePlanned(p, now):
			// The same instance, as it was: a pod the API server shows
			// being deleted may still run in the cache, and a plan
			// made from that would take it for the task's current pod.
			// A change the plan does not read (readiness, a node's
			// heartbeat in its status) holds nothing up: a big job
			// starting, or one pod flapping, would hold every plan.
			older++
		}
	}
	for _, v := range vanished {
		if liveNames[v.Name] {
			continue
		}
		ref, err := r.restoreLabels(ctx, job, v.Name)
		if err != nil {
			return false, err
		}
		if ref != nil {
			appear = append(appear, *ref)
		}
	}
	key := client.ObjectKeyFromObject(job)
	if len(appear) == 0 && len(leave) == 0 && older == 0 {
		r.confirmed.add(key)
		return true, nil
	}
	if waits := r.confirmed.behind(key); waits == cacheWaitsToTell {
		r.recorder.Eventf(job, nil, corev1.EventTypeWarning, string(musterv1.EventReasonCacheBehind), "Reconcile",
			"the operator's pod cache has been behind the API server for %d plans in a row (%d pods not yet seen, %d gone yet shown, %d in older states): the job's changes wait for it",
			waits, len(appear), len(leave), older)
	}
	// Not confirmed: the next plan that would act checks again. Pods to
	// appear or leave hold the job's plans until the cache shows them (the
	// expectations); an older state of a pod is caught up with by its
	// next event, which brings the job back.
	ctrl.LoggerFrom(ctx).V(2).Info("The pod cache is behind the API server; waiting for it",
		"notYetSeen", len(appear), "goneYetShown", len(leave), "olderStates", older)
	cacheWaits.Inc()
	r.expect.expectView(job.UID, appear, leave, now)
	return false, nil
}

// restoreLabels looks up a task's pod by name: one the job controls that
// the cache does not show has had the labels it is found by changed (the
// admission policy Muster installs refuses that, but it may be missing).
// Its Muster labels are put back, read from what its spec says of it, and
// the job's events say so; it returns the pod, for the cache to show. A
// pod it finds no labels for is left to be taken for vanished, and said
// so.
func (r *Reconciler) restoreLabels(ctx context.Context, job *musterv1.TrainingJob, name string) (*plan.PodRef, error) {
	pod := &corev1.Pod{}
	if err := r.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, pod); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(pod, job) {
		return nil, nil
	}
	labels, ok := taskLabels(job, pod)
	if !ok {
		r.recorder.Eventf(job, pod, corev1.EventTypeWarning, string(musterv1.EventReasonPodLabelsChanged), "Reconcile",
			"pod %s no longer carries the labels Muster finds its pods by, and its spec does not say which task it is: it is taken for lost", name)
		return nil, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID, "labels": labels}})
	if err != nil {
		return nil, err
	}
	if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			// Gone or replaced meanwhile: the next plan sees to it.
			return nil, nil
		}
		return nil, fmt.Errorf("restoring the labels of pod %s: %w", name, err)
	}
	r.recorder.Eventf(job, pod, corev1.EventTypeWarning, string(musterv1.EventReasonPodLabelsChanged), "Reconcile",
		"the labels Muster finds pod %s by were changed; they are put back (changing a pod's muster.dev/ labels is refused where Muster's admission policy is installed)", name)
	return &plan.PodRef{Name: pod.Name, UID: pod.UID}, nil
}

// taskLabels are the Muster labels of a task's pod, read from the variables
// Muster gave its first container: unlike labels, a pod's spec cannot
// change. The attempt variables of a pod that restarts in place follow its
// labels (objects.followAttemptLabels), so they say nothing once the
// labels are gone: its attempts are read from the job's status, which
// holds the numbers the last restart asked of the pod.
func taskLabels(job *musterv1.TrainingJob, pod *corev1.Pod) (map[string]string, bool) {
	if len(pod.Spec.Containers) == 0 {
		return nil, false
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	role := topology.Find(job, env[musterv1.EnvRoleName].Value)
	if role == nil || env[musterv1.EnvJobName].Value != job.Name {
		return nil, false
	}
	index, err := strconv.Atoi(env[musterv1.EnvTaskIndex].Value)
	if err != nil || index < 0 || pod.Name != objects.PodName(job.Name, role.Name, int32(index)) {
		return nil, false
	}
	labels := map[string]string{musterv1.LabelJobName: job.Name, musterv1.LabelRole: role.Name, musterv1.LabelTaskIndex: strconv.Itoa(index)}
	for label, name := range map[string]string{musterv1.LabelJobAttempt: musterv1.EnvJobAttempt, musterv1.LabelTaskAttempt: musterv1.EnvTaskAttempt} {
		e := env[name]
		n, err := strconv.Atoi(e.Value)
		switch {
		case e.ValueFrom == nil && err == nil && n >= 0:
		case followsLabel(e, label) && label == musterv1.LabelJobAttempt:
			n = int(job.Status.Attempt)
		case followsLabel(e, label):
			t, ok := keptTaskAttempt(job, role.Name, int32(index))
			if !ok {
				return nil, false
			}
			n = int(t)
		default:
			return nil, false
		}
		labels[label] = strconv.Itoa(n)
	}
	if topology.ScalingOf(job, role.Name) != nil {
		labels[musterv1.LabelScalable] = "true"
	}
	return labels, true
}

// followsLabel is whether a variable reads the pod's label.
func followsLabel(e corev1.EnvVar, label string) bool {
	return e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['"+label+"']"
}

// keptTaskAttempt is the instance of a task that its pod, restarting in
// place, was last asked to be, as the job's status keeps it: the task's
// attempts, or the one after while the task restarts (status keeps the
// ended instance's number until the next runs).
func keptTaskAttempt(job *musterv1.TrainingJob, role string, index int32) (int32, bool) {
	for i := range job.Status.Roles {
		if rs := &job.Status.Roles[i]; rs.Name == role {
			t, ok := rs.Task(index)
			if !ok || t.Attempts <= 0 {
				return 0, false
			}
			if t.State == musterv1.TaskRestarting {
				return t.Attempts + 1, true
			}
			return t.Attempts, true
		}
	}
	return 0, false
}
