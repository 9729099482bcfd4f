package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/devcluster"
)

// stepTimeout bounds each step of a scenario. Under chaos the operator is
// down for part of every step, so it is generous; a step that needs it all
// is a job that stopped converging.
const stepTimeout = 3 * time.Minute

// outcome is what a job records of its life: an interrupted run must
// record the same as an undisturbed one.
type outcome struct {
	Phase               musterv1.JobPhase
	Reason              string
	Attempt             int32
	Restarts            int32
	AccountableRestarts int32
	Retries             int32
	TaskRestarts        int32
	// Pods is how many pods the job had in all: a pod made twice, or made
	// for a suspended job, shows here.
	Pods int
}

func outcomeOf(job *musterv1.TrainingJob) outcome {
	o := outcome{
		Phase:               job.Status.Phase,
		Attempt:             job.Status.Attempt,
		Restarts:            job.Status.Restarts.Total,
		AccountableRestarts: job.Status.Restarts.Accountable,
		Retries:             job.Status.Retries.Total,
	}
	if job.Status.Completion != nil {
		o.Reason = string(job.Status.Completion.Reason)
	}
	for _, r := range job.Status.Roles {
		for _, t := range r.Tasks {
			o.TaskRestarts += t.Restarts * max(t.Count, 1)
		}
	}
	return o
}

// scenario drives one job through a life and returns its final state.
type scenario struct {
	name string
	run  func(d *driver, name string) (*musterv1.TrainingJob, error)
}

// scenarios cover what the operator must survive a crash in the middle of:
// pod replacement, gang restarts, rescales, suspension, completion and a
// job failing for good.
var scenarios = []scenario{
	{"task-restarts", taskRestarts},
	{"gang-restarts", gangRestarts},
	{"rescale", rescale},
	{"suspend-resume", suspendResume},
	{"budget-exhausted", budgetExhausted},
	{"self-completing", selfCompleting},
}

// driver acts as the user and as the kubelet of the fake nodes for jobs in
// one namespace.
type driver struct {
	ctx context.Context
	ns  string
}

// job starts a job in the driver's namespace.
func (d *driver) job(name string) *testutil.JobBuilder {
	return testutil.MakeJob(name, d.ns)
}

// onFakeNodes places a role's pods on the KWOK nodes. They stop without
// grace: KWOK completes a graceful deletion by deleting the pod by name, with
// no UID precondition, so a late one can delete the replacement that took
// the name (no real kubelet does that), and the chaos tier would count a pod
// too many. The operator's graceful deletion is shown on the process node.
func onFakeNodes(tpl *corev1.PodTemplateSpec) {
	tpl.Spec.TerminationGracePeriodSeconds = new(int64(0))
	tpl.Spec.NodeSelector = map[string]string{devcluster.FakeNodeLabel: devcluster.FakeNodeLabelValue}
	tpl.Spec.Tolerations = []corev1.Toleration{{Key: devcluster.FakeNodeTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
}

func (d *driver) create(b *testutil.JobBuilder) error {
	job := b.Obj()
	for i := range job.Spec.Roles {
		onFakeNodes(&job.Spec.Roles[i].Template)
	}
	return d.retry(func(ctx context.Context) error {
		err := k8s.Create(ctx, job.DeepCopy())
		if apierrors.IsAlreadyExists(err) {
			// An earlier try that timed out may have created it.
			return nil
		}
		return err
	})
}

// retry calls fn until it succeeds: the API server may be down for a few
// seconds in this tier.
func (d *driver) retry(fn func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(d.ctx, 200*time.Millisecond, stepTimeout, true, func(ctx context.Context) (bool, error) {
		last = fn(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last error: %w)", err, last)
	}
	return nil
}

// waitJob waits until check passes on the job, and returns it.
func (d *driver) waitJob(name, what string, check func(*musterv1.TrainingJob) bool) (*musterv1.TrainingJob, error) {
	var job musterv1.TrainingJob
	err := wait.PollUntilContextTimeout(d.ctx, 200*time.Millisecond, stepTimeout, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: d.ns, Name: name}, &job); err != nil {
			return false, nil //nolint:nilerr // the API server may be restarting: keep waiting
		}
		return check(&job), nil
	})
	if err != nil {
		return &job, fmt.Errorf("job %s: waiting for %s: %w (phase %s, attempt %d, restarts %d)", name, what, err, job.Status.Phase, job.Status.Attempt, job.Status.Restarts.Total)
	}
	return &job, nil
}

func (d *driver) waitPhase(name string, phase musterv1.JobPhase) (*musterv1.TrainingJob, error) {
	return d.waitJob(name, "phase "+string(phase), func(j *musterv1.TrainingJob) bool { return j.Status.Phase == phase })
}

// livePods are the job's pods that are neither finished nor deleting.
func (d *driver) livePods(ctx context.Context, name string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := k8s.List(ctx, &list, client.InNamespace(d.ns), client.MatchingLabels{musterv1.LabelJobName: name}); err != nil {
		return nil, err
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed &&
			p.Labels[musterv1.LabelComponent] == "" {
			live = append(live, p)
		}
	}
	return live, nil
}

// waitRunning waits until the job has exactly n live pods, all Running,
// that check accepts, and returns them.
func (d *driver) waitRunning(name string, n int, check func(corev1.Pod) bool) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(d.ctx, 200*time.Millisecond, stepTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = d.livePods(ctx, name); err != nil || len(pods) != n {
			return false, nil //nolint:nilerr // the API server may be restarting: keep waiting
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || (check != nil && !check(p)) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		// The last poll may have failed with the poll's own deadline: look
		// once more, so the error tells what the pods were doing.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(d.ctx), 10*time.Second)
		defer cancel()
		if live, lerr := d.livePods(ctx, name); lerr == nil {
			pods = live
		}
		return pods, fmt.Errorf("job %s: waiting for %d running pods: %w (live: %s)", name, n, err, framework.PodsSummary(pods))
	}
	return pods, nil
}

// exit makes a fake node's pod end with code, as its kubelet would report
// it: KWOK's completion stage acts on the annotations.
//
// The patch names the pod's UID, so that it cannot land on another pod: a
// try that timed out may have landed, the pod ended and its replacement
// took the name, and a retry by name alone would end the replacement too
// (a failure the scenario never asked for). The API server refuses a patch
// that changes the UID (the field is immutable), and a pod that is gone,
// or whose name another UID holds, has ended: the earlier try landed.
func (d *driver) exit(pod corev1.Pod, code int) error {
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:"0s",%q:%q}}}`, pod.UID,
		devcluster.KWOKCompleteDelayAnnotation, devcluster.KWOKExitCodeAnnotation, strconv.Itoa(code))
	return d.retry(func(ctx context.Context) error {
		err := k8s.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
		if apierrors.IsNotFound(err) || otherUID(err) {
			return nil
		}
		return err
	})
}

// otherUID is whether a write naming a UID was refused because the object
// of that name has another.
func otherUID(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// exitTask ends the running pod of one task and waits until its
// replacement (a pod of the same name with another UID) runs.
func (d *driver) failAndWaitReplaced(name, pod string, code int) error {
	pods, err := d.livePods(d.ctx, name)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.Name != pod {
			continue
		}
		if err := d.exit(p, code); err != nil {
			return err
		}
		_, err := d.waitRunning(name, len(pods), func(q corev1.Pod) bool { return q.Name != pod || q.UID != p.UID })
		return err
	}
	return fmt.Errorf("job %s has no live pod %s", name, pod)
}

// finishAll ends every live pod with code 0 and waits for the phase.
func (d *driver) finishAll(name string, n int, phase musterv1.JobPhase) (*musterv1.TrainingJob, error) {
	pods, err := d.waitRunning(name, n, nil)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if err := d.exit(p, 0); err != nil {
			return nil, err
		}
	}
	return d.waitPhase(name, phase)
}

func (d *driver) update(name string, mutate func(*musterv1.TrainingJob)) error {
	return d.retry(func(ctx context.Context) error {
		var job musterv1.TrainingJob
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: d.ns, Name: name}, &job); err != nil {
			return err
		}
		mutate(&job)
		return k8s.Update(ctx, &job)
	})
}

// taskRestarts: three pods fail one after the other; each is replaced.
func taskRestarts(d *driver, name string) (*musterv1.TrainingJob, error) {
	if err := d.create(d.job(name).Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(10)); err != nil {
		return nil, err
	}
	if _, err := d.waitRunning(name, 3, nil); err != nil {
		return nil, err
	}
	for _, i := range []int{0, 2, 1} {
		if err := d.failAndWaitReplaced(name, fmt.Sprintf("%s-w-%d", name, i), 137); err != nil {
			return nil, err
		}
	}
	return d.finishAll(name, 3, musterv1.PhaseSucceeded)
}

// gangRestarts: a failure rule restarts the whole job twice.
func gangRestarts(d *driver, name string) (*musterv1.TrainingJob, error) {
	b := d.job(name).Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(10).
		Rule(musterv1.FailureRule{OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{42}}, Action: musterv1.ActionRestartJob})
	if err := d.create(b); err != nil {
		return nil, err
	}
	// Attempts count from 0.
	for attempt := 0; attempt < 2; attempt++ {
		pods, err := d.waitRunning(name, 3, attemptIs(attempt))
		if err != nil {
			return nil, err
		}
		if err := d.exit(pods[1], 42); err != nil {
			return nil, err
		}
	}
	if _, err := d.waitRunning(name, 3, attemptIs(2)); err != nil {
		return nil, err
	}
	return d.finishAll(name, 3, musterv1.PhaseSucceeded)
}

func attemptIs(n int) func(corev1.Pod) bool {
	return func(p corev1.Pod) bool { return p.Labels[musterv1.LabelJobAttempt] == strconv.Itoa(n) }
}

// rescale: 4 -> 2 -> 5 -> 3 workers, then completion.
func rescale(d *driver, name string) (*musterv1.TrainingJob, error) {
	if err := d.create(d.job(name).Role("w", 4).Scalable(1, 6).RestartPolicy(musterv1.RestartPolicyOnFailure)); err != nil {
		return nil, err
	}
	if _, err := d.waitRunning(name, 4, nil); err != nil {
		return nil, err
	}
	for _, n := range []int32{2, 5, 3} {
		if err := d.update(name, func(j *musterv1.TrainingJob) { j.Spec.Scaling.Replicas = &n }); err != nil {
			return nil, err
		}
		if _, err := d.waitRunning(name, int(n), nil); err != nil {
			return nil, err
		}
		if _, err := d.waitJob(name, fmt.Sprintf("%d replicas", n), func(j *musterv1.TrainingJob) bool { return j.Status.Replicas == n }); err != nil {
			return nil, err
		}
	}
	return d.finishAll(name, 3, musterv1.PhaseSucceeded)
}

// suspendResume: suspended while running, resumed, completed.
func suspendResume(d *driver, name string) (*musterv1.TrainingJob, error) {
	if err := d.create(d.job(name).Role("w", 3).RestartPolicy(musterv1.RestartPolicyOnFailure)); err != nil {
		return nil, err
	}
	if _, err := d.waitRunning(name, 3, nil); err != nil {
		return nil, err
	}
	if err := d.update(name, func(j *musterv1.TrainingJob) { j.Spec.Run.Execution = musterv1.ExecutionSuspend }); err != nil {
		return nil, err
	}
	if _, err := d.waitPhase(name, musterv1.PhaseSuspended); err != nil {
		return nil, err
	}
	if _, err := d.waitRunning(name, 0, nil); err != nil {
		return nil, err
	}
	if err := d.update(name, func(j *musterv1.TrainingJob) { j.Spec.Run.Execution = musterv1.ExecutionStart }); err != nil {
		return nil, err
	}
	return d.finishAll(name, 3, musterv1.PhaseSucceeded)
}

// budgetExhausted: the second failure is one more than the backoff limit.
func budgetExhausted(d *driver, name string) (*musterv1.TrainingJob, error) {
	if err := d.create(d.job(name).Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(1)); err != nil {
		return nil, err
	}
	if _, err := d.waitRunning(name, 2, nil); err != nil {
		return nil, err
	}
	if err := d.failAndWaitReplaced(name, name+"-w-0", 1); err != nil {
		return nil, err
	}
	pods, err := d.waitRunning(name, 2, nil)
	if err != nil {
		return nil, err
	}
	if err := d.exit(pods[0], 1); err != nil {
		return nil, err
	}
	return d.waitPhase(name, musterv1.PhaseFailed)
}

// selfCompleting: the pods end by themselves, a few seconds in.
func selfCompleting(d *driver, name string) (*musterv1.TrainingJob, error) {
	b := d.job(name).Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).Template(func(t *corev1.PodTemplateSpec) {
		t.Annotations = map[string]string{devcluster.KWOKCompleteDelayAnnotation: "3s"}
	})
	if err := d.create(b); err != nil {
		return nil, err
	}
	return d.waitPhase(name, musterv1.PhaseSucceeded)
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var sa corev1.ServiceAccount
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "default"}, &sa) == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s has no default ServiceAccount: %v", ns.Name, err)
	}
	return ns.Name
}
