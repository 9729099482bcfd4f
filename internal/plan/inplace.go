package plan

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/text"
)

// Restarts in place. A restart of a task, a role or the whole job moves
// each pod it restarts to its next instance: Recreate deletes the pod and
// creates the next one; InPlace patches the pod's attempt labels and asks
// its restart watcher to restart every container (observe.InPlaceOf),
// keeping the pod. Either way the next instance has the next task-attempt
// number, and the planner tells instances apart by it (isEnded), the same
// pod UID serving several in place.
//
// The patch goes after the status that decided it is written, like any
// action. A plan that finds the pod still labelled for the instance or the
// attempt before (its cache behind, or an operator that stopped half way)
// asks again, with the same values: the ask is idempotent, and a pod is
// deleted only when it cannot restart in place.

// InPlaceSupport is what the operator offers for restarting in place.
type InPlaceSupport struct {
	// WatcherImage runs the restart watcher: the operator's own image.
	// Empty: no job restarts in place.
	WatcherImage string
	// Default is the restart mode of a job whose spec names none.
	Default musterv1.RestartMode
}

// PodRestart asks one pod instance to restart in place into its next
// instance.
type PodRestart struct {
	Name string
	UID  types.UID
	// Attempt and TaskAttempt are the pod's new attempt labels.
	Attempt, TaskAttempt int32
	// Restarts is the new value of its muster.dev/in-place-restarts
	// annotation.
	Restarts int32
	Reason   string
}

// restartInPlace asks pod to restart in place into the given instance,
// once per plan: a later decision of the same plan (a job restart after a
// task's) replaces an earlier ask, so the pod moves to where the plan
// leaves its job, never to an attempt the plan itself ended. A pod the
// plan deletes is not asked.
func (r *Result) restartInPlace(pod *corev1.Pod, attempt, taskAttempt int32, reason string) {
	if r.deletes(pod.UID) {
		return
	}
	ask := PodRestart{Name: pod.Name, UID: pod.UID, Attempt: attempt,
		TaskAttempt: taskAttempt, Restarts: observe.NextInPlaceRestart(pod), Reason: reason}
	for i, p := range r.RestartPods {
		if p.UID == pod.UID {
			r.RestartPods[i] = ask
			return
		}
	}
	r.RestartPods = append(r.RestartPods, ask)
}

// inPlaceFor is whether the pods of role are made to, and do, restart in
// place: the role's restart mode, else the job's, else the operator's
// default, is InPlace,
// the operator knows the watcher's image, and no placeholder holds the
// attempt in the pod's spec. A job with a gang backend keeps the gang
// that placed its pods while they restart in place (gang.Placing).
func (c *planContext) inPlaceFor(role *musterv1.Role) bool {
	mode := role.RestartMode
	if mode == "" {
		mode = c.job.Spec.FailurePolicy.RestartMode
	}
	if mode == "" {
		mode = c.inPlace.Default
	}
	return mode == musterv1.RestartModeInPlace && c.inPlace.WatcherImage != "" && !c.attemptPlaceholders(role)
}

// attemptPlaceholders is objects.UsesAttemptPlaceholders for role, worked
// out once per plan.
func (c *planContext) attemptPlaceholders(role *musterv1.Role) bool {
	uses, ok := c.cache.placeholders[role.Name]
	if !ok {
		uses = objects.UsesAttemptPlaceholders(&role.Template)
		c.cache.placeholders[role.Name] = uses
	}
	return uses
}

// inPlaceOptions is how createPod readies a role's pods to restart in
// place: a role that never restarts a task lets every exit end its pod.
func (c *planContext) inPlaceOptions(role *musterv1.Role) objects.InPlace {
	if c.cache.final == nil {
		c.cache.final = c.classifier.PermanentExitCodes()
	}
	return objects.InPlace{
		WatcherImage: c.inPlace.WatcherImage,
		Final:        c.cache.final,
		NoRetry:      role.RestartPolicy == musterv1.RestartPolicyNever,
	}
}

// restartsInPlace is whether pod, of role, restarts in place: its role
// does (inPlaceFor) and the pod can (restartableInPlace). When the role
// does and the pod cannot, why not, for the restart's event and the
// attempt's record; empty for a role that re-creates its pods anyway, or
// none (nil).
func (c *planContext) restartsInPlace(role *musterv1.Role, pod *corev1.Pod) (bool, string) {
	if role == nil || !c.inPlaceFor(role) {
		return false, ""
	}
	return restartableInPlace(pod)
}

// restartableInPlace is whether pod can restart in place, or why not.
func restartableInPlace(pod *corev1.Pod) (bool, string) {
	switch {
	case observe.InPlaceOf(pod) == observe.NotInPlace:
		return false, "it was not made to restart in place"
	case pod.DeletionTimestamp != nil:
		return false, "it is being deleted"
	case observe.Ended(pod):
		return false, "it has ended (" + strings.ToLower(string(pod.Status.Phase)) + ")"
	}
	return true, ""
}

// nextInstance is the number of the instance that follows pod's in task
// ts: the one after whichever is higher, the pod's or the one status
// keeps.
func nextInstance(ts *musterv1.TaskStatus, pod *corev1.Pod) int32 {
	n := observe.TaskAttempt(pod)
	if ts != nil {
		n = max(n, ts.Attempts)
	}
	return n + 1
}

// maxFallbackNames bounds how many re-created pods a restart's record and
// event name.
const maxFallbackNames = 5

// fallbacks counts the pods one restart re-created rather than restarted
// in place, naming the first few with why.
type fallbacks struct {
	inPlace, recreated int32
	named              []string
}

func (f *fallbacks) add(pod *corev1.Pod, why string) {
	f.recreated++
	if len(f.named) < maxFallbackNames {
		f.named = append(f.named, pod.Name+" ("+why+")")
	}
}

// message says how the restart went, for an event and the attempt's
// record; empty when every pod restarted in place or the job re-creates
// pods anyway.
func (f fallbacks) message() string {
	if f.recreated == 0 {
		return ""
	}
	msg := fmt.Sprintf("%d pods restarted in place, %d re-created: %s", f.inPlace, f.recreated, strings.Join(f.named, ", "))
	if more := int(f.recreated) - len(f.named); more > 0 {
		msg += " and " + strconv.Itoa(more) + " more"
	}
	return text.Head(msg, maxCompletionMessageLen)
}
