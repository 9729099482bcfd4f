package plan

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/observe"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/internal/testutil/crdschema"
	"github.com/muster-dev/muster/internal/testutil/kubelet"
)

// simJobs are the shapes the simulation drives: each exercises a different
// restart path.
func simJobs() map[string]*musterv1.TrainingJob {
	onFailed := []musterv1.FailureEvent{musterv1.EventPodFailed}
	return map[string]*musterv1.TrainingJob{
		"static pytorch, gang restarts": testutil.MakeJob("gang", "ns").UID("gang").PyTorch().
			Role("master", 1).Role("worker", 3).BackoffLimit(6).WithDefaults().Obj(),
		"generic, rules and per-task limit": testutil.MakeJob("rules", "ns").UID("rules").
			Role("ps", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).
			Role("trainer", 3).RestartPolicy(musterv1.RestartPolicyOnFailure).Completion(3, 2).
			BackoffLimit(8).BackoffLimitPerTask(2).
			Rule(musterv1.FailureRule{OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{3}}, Roles: []string{"trainer"}, Action: musterv1.ActionFailTask}).
			Rule(musterv1.FailureRule{OnEvents: onFailed, Roles: []string{"ps"}, Action: musterv1.ActionRestartRole}).
			WithDefaults().Obj(),
		"elastic, scaled while failing": testutil.MakeJob("el", "ns").UID("el").
			Role("worker", 4).Elastic(2, 6).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(10).WithDefaults().Obj(),
		"never restarted, retried as a whole": func() *musterv1.TrainingJob {
			j := testutil.MakeJob("retry", "ns").UID("retry").Role("w", 3).RestartPolicy(musterv1.RestartPolicyNever).
				BackoffLimit(5).WithDefaults().Obj()
			j.Spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}
			return j
		}(),
	}
}

// TestSimulation drives the planner through random pod events, operator
// crashes (between deciding and writing, and between writing and acting)
// and rescales, seeded so that a failure replays, and checks invariants
// after every step:
//   - the planner never creates a pod whose name a pod it sees still
//     holds, so a task never has two pods;
//   - restart, retry and attempt counters never go down;
//   - accountable restarts never exceed the backoff limit;
//   - a finished job stays finished and never creates a pod;
//   - the same input always gives the same plan;
//   - a pod's end is counted once at most, and only once it has ended:
//     never while it runs.
//
// A crash can also cut a forced delete half way (applyCut), a plan that
// only shows progress may go unwritten (the operator's status batch), and
// an operator may start with a pod cache older than the status it reads
// (see confirm).
func TestSimulation(t *testing.T) {
	for name, job := range simJobs() {
		for seed := uint64(1); seed <= 25; seed++ {
			t.Run(fmt.Sprintf("%s/seed-%d", name, seed), func(t *testing.T) {
				s := &sim{world: newWorld(t, job.DeepCopy()), rnd: rand.New(rand.NewPCG(seed, 7))}
				s.run(300, func() bool { return false })
			})
		}
	}
}

// inPlaceRuns counts the pods the in-place simulations saw restart in
// place: a simulation that never got there tested nothing.
var inPlaceRuns atomic.Int64

// TestInPlaceSimulation is TestSimulation for jobs that restart in place:
// restarts patch pods rather than re-create them, training containers that
// fail with a retryable code are restarted alone by their rule, and the
// node restarts a pod's containers some steps after it was asked.
func TestInPlaceSimulation(t *testing.T) {
	t.Cleanup(func() {
		if n := inPlaceRuns.Load(); n < 100 {
			t.Errorf("the simulations saw %d in-place restarts done: too few to test them", n)
		}
	})
	for name, job := range simJobs() {
		for seed := uint64(1); seed <= 25; seed++ {
			t.Run(fmt.Sprintf("%s/seed-%d", name, seed), func(t *testing.T) {
				s := &sim{world: newWorld(t, job.DeepCopy()), rnd: rand.New(rand.NewPCG(seed, 11))}
				s.inPlace = InPlaceSupport{WatcherImage: "muster:sim", Default: musterv1.RestartModeInPlace}
				s.run(300, func() bool { return false })
				inPlaceRuns.Add(int64(strings.Count(strings.Join(s.log, "\n"), "restarted in place ")))
			})
		}
	}
}

// run plays steps events, each followed by a reconcile that may crash,
// checking the invariants after each; done ends the run early.
func (s *sim) run(steps int, done func() bool) {
	s.t.Helper()
	for i := 0; i < steps && !done(); i++ {
		s.event()
		if s.away > 0 {
			s.away--
			continue
		}
		s.reconcile(i)
	}
}

// awaySteps is how many events an operator that goes away misses: enough
// for a training container to fail, and be restarted alone, several times
// between two plans.
const awaySteps = 4

type sim struct {
	*world
	// writeAll writes every plan that is not crashed: the lockstep test
	// compares decisions step by step, and whether a status can wait is
	// judged on the short form only.
	writeAll bool
	rnd      *rand.Rand
	prev     musterv1.TrainingJobStatus
	log      []string
	// longText gives ended pods reasons and messages longer than status
	// may hold, in several bytes per character; off where the golden
	// traces show them.
	longText bool
	// noLag keeps the operator's pod cache up to date: the lockstep test
	// compares what the full and short status tell apart on the same pods.
	noLag bool
	// cache is the operator's view of the pods while it is behind the
	// world's, or nil: an operator that has just started may read a
	// status newer than its pod cache.
	cache map[string]*corev1.Pod
	// pasts are the world's pods as they were after each of the last few
	// reconciles, for a cache to be behind by.
	pasts []map[string]*corev1.Pod
	// confirmed is whether the operator has checked, since it started,
	// that its cache shows the job's pods as the API server does.
	confirmed bool
	// counted are the pod instances whose end a written status counted.
	counted map[types.UID]bool
	// made are the instances the world made of each pod name, oldest
	// first; a pod that restarts in place is one instance after another.
	made map[string][]madePod
	// failedInPlace are the instances whose training container failed and
	// was restarted alone (restartedAlone), by UID and instance.
	failedInPlace map[string]bool
	// away is how many more events pass with no reconcile: the operator
	// is down (an upgrade, a lost leader) while its pods run on, in run
	// only.
	away int
}

// madePod is one pod instance the world made.
type madePod struct {
	uid     types.UID
	attempt int32
}

// maxPasts is how far behind the world a cache may be, in reconciles.
const maxPasts = 6

// A reason and a message past what the schema lets status hold (128 and
// 1024), of characters of more than one byte.
var (
	longReason  = strings.Repeat("Überlastet", 20)
	longMessage = strings.Repeat("Traceback … ", 200)
)

// apiServer is the CRD's schema every planned status must pass: one the API
// server refuses is refused on every write, and the job never moves again.
var apiServer = sync.OnceValue(func() *crdschema.APIServer { return crdschema.Load(panicker{}) })

// panicker fails crdschema.Load, which has no test of its own to fail.
type panicker struct{}

func (panicker) Helper()           {}
func (panicker) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nlast events:\n  %s", fmt.Sprintf(format, args...), joinTail(s.log, 15))
}

func joinTail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

// names is the world's pod names in a stable order, so a seed replays.
func (s *sim) names() []string {
	out := make([]string, 0, len(s.pods))
	for name := range s.pods {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// event changes the world the way the cluster or a user would.
func (s *sim) event() {
	s.now = s.now.Add(time.Duration(s.rnd.IntN(20)) * time.Second)
	names := s.names()
	if s.inPlace.WatcherImage != "" && s.rnd.IntN(3) == 0 {
		// The nodes restart every container of the pods asked to, a step
		// or a few after the ask.
		for _, name := range names {
			if p := s.pods[name]; p.DeletionTimestamp == nil && observe.InPlaceOf(p) == observe.RunRestarting {
				s.nodeRestarted(p)
				s.log = append(s.log, "restarted in place "+p.Name)
			}
		}
	}
	pick := func() *corev1.Pod {
		if len(names) == 0 {
			return nil
		}
		return s.pods[names[s.rnd.IntN(len(names))]]
	}
	switch r := s.rnd.IntN(100); {
	case r < 35:
		if p := pick(); p != nil && p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil {
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
			if observe.InPlaceOf(p) != observe.NotInPlace {
				s.nodeRestarted(p)
			}
			s.log = append(s.log, "running "+p.Name)
		}
	case r < 55:
		if p := pick(); p != nil && p.Status.Phase == corev1.PodRunning {
			code := []int32{0, 0, 1, 2, 3, 127, 137, 143, 201}[s.rnd.IntN(9)]
			if s.restartedAlone(p, code) {
				break
			}
			p.Status = testutil.ExitedStatus(code, "Error", s.now)
			if s.longText && code != 0 {
				p.Status.ContainerStatuses[0].State.Terminated.Reason = longReason
				p.Status.ContainerStatuses[0].State.Terminated.Message = longMessage
			}
			s.log = append(s.log, fmt.Sprintf("exit %s %d", p.Name, code))
		}
	case r < 62:
		if p := pick(); p != nil && p.DeletionTimestamp == nil {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}
			if s.longText {
				p.Status.Reason, p.Status.Message = longReason, longMessage
			}
			s.log = append(s.log, "evicted "+p.Name)
		}
	case r < 68:
		if p := pick(); p != nil {
			delete(s.pods, p.Name)
			s.log = append(s.log, "vanished "+p.Name)
		}
	case r < 74:
		if p := pick(); p != nil && p.Status.Phase == corev1.PodPending {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
			s.log = append(s.log, "unschedulable "+p.Name)
		}
	case r < 80:
		if sc := &s.job.Spec.Scaling; len(sc.Roles) > 0 {
			n := int32(2 + s.rnd.IntN(5))
			sc.Replicas = &n
			s.job.Generation++
			s.log = append(s.log, fmt.Sprintf("scale to %d", n))
		}
	case r < 83:
		suspended := s.job.Spec.Run.Execution != musterv1.ExecutionSuspend
		s.job.Spec.Run.Execution = musterv1.ExecutionStart
		if suspended {
			s.job.Spec.Run.Execution = musterv1.ExecutionSuspend
		}
		s.job.Generation++
		s.log = append(s.log, fmt.Sprintf("suspend %v", suspended))
	case r < 88:
		// Deleted without grace by someone else: only the tracking
		// finalizer holds it until the operator releases it.
		if p := pick(); p != nil && p.DeletionTimestamp == nil && observe.Tracked(p) {
			p.DeletionTimestamp = new(metav1.NewTime(s.now))
			p.DeletionGracePeriodSeconds = new(int64(0))
			s.log = append(s.log, "deleted without grace "+p.Name)
		}
	case r < 91:
		// Another operator takes over, with a pod cache that is behind.
		if n := len(s.pasts); n > 0 && !s.noLag {
			back := s.rnd.IntN(n)
			s.cache, s.confirmed = s.pasts[n-1-back], false
			s.log = append(s.log, fmt.Sprintf("an operator starts with a pod cache %d reconciles behind", back+1))
		}
	case r < 95:
		// The operator goes away while pods that restart in place run on:
		// their nodes restart failed training containers without it.
		if s.inPlace.WatcherImage != "" {
			s.away, s.confirmed = awaySteps, false
			s.log = append(s.log, fmt.Sprintf("the operator is away for %d events", awaySteps))
		}
	case r < 98:
		// A pod's restart watcher exits on its own and is restarted alone,
		// perhaps with an ask landed that it had not read yet.
		if s.inPlace.WatcherImage == "" {
			break
		}
		if p := pick(); p != nil && observe.InPlaceOf(p) != observe.NotInPlace && p.DeletionTimestamp == nil && !observe.Ended(p) {
			kubelet.WatcherRestartedAlone(p, s.now)
			s.log = append(s.log, "watcher restarted alone "+p.Name)
		}
	}
}

// confirm is the controller's check of its pod cache (see
// controller.confirmPods): the first plan of a job after the operator
// starts that would change anything, and any plan in which a pod
// vanished, is made on a cache that shows the same pods as the API
// server, in the same states, or waits for one that does. A cache behind the status would
// otherwise count an end twice, or one that never happened. It reports
// whether the plan may go on.
func (s *sim) confirm(res Result) bool {
	changes := len(res.Ended) > 0 || len(res.CreatePods) > 0 || len(res.DeletePods) > 0 || len(res.RestartPods) > 0 ||
		len(res.ReleasePods) > 0 || len(res.ReleaseAtOnce) > 0 || !reflect.DeepEqual(res.Status, s.job.Status)
	if (s.confirmed || !changes) && len(res.Vanished()) == 0 {
		return true
	}
	if s.cache == nil || sameStates(s.cache, s.pods) {
		s.confirmed = true
		return true
	}
	s.cache = nil
	s.log = append(s.log, "  the pod cache is behind: wait for it")
	return false
}

// sameStates is whether two views hold the same pod instances, each in
// the same state (the controller compares resourceVersions).
func sameStates(a, b map[string]*corev1.Pod) bool {
	if len(a) != len(b) {
		return false
	}
	for name, p := range a {
		if q := b[name]; q == nil || !reflect.DeepEqual(p, q) {
			return false
		}
	}
	return true
}

// countEnds checks the ends a written status counted: each at most once,
// and only of a pod that has ended; and, of a pod that restarts in place,
// that the restarts its node made alone are all charged by then, at least
// once (chargeNodeRestarts).
func (s *sim) countEnds(step int, res Result, view map[string]*corev1.Pod) {
	s.t.Helper()
	if s.counted == nil {
		s.counted = map[types.UID]bool{}
	}
	for _, e := range res.Ended {
		uid := e.UID
		if e.Vanished() {
			for _, m := range s.made[e.Name] {
				if m.attempt == e.Attempt {
					uid = m.uid
				}
			}
			if uid == "" {
				s.fatalf("step %d: counts the end of %s#%d, an instance never made", step, e.Name, e.Attempt)
			}
		}
		// A pod that restarts in place is several instances of its task:
		// an end is the instance's.
		key := instanceKey(uid, e.Attempt)
		if s.counted[types.UID(key)] {
			s.fatalf("step %d: counts the end of %s (%s) a second time", step, e.Name, key)
		}
		s.counted[types.UID(key)] = true
		s.chargedAlone(step, res, e, view[e.Name])
		p := s.pods[e.Name]
		if p == nil || p.UID != uid || p.DeletionTimestamp != nil || observe.Ended(p) {
			continue
		}
		// A pod that runs on: its instance failed in place, whether or not
		// the pod has moved to its next one since.
		if !s.failedInPlace[key] {
			s.fatalf("step %d: counts the end of %s (%s), which has not ended (%s)", step, e.Name, key, p.Status.Phase)
		}
	}
}

// chargedAlone checks that a written status that counts the end of a pod
// that restarts in place has charged every restart its node made alone of
// the pod's training containers, as the plan saw them (observe.NodeRestarts
// of seen, the pod in the plan's view).
func (s *sim) chargedAlone(step int, res Result, e PodEnd, seen *corev1.Pod) {
	s.t.Helper()
	// A pod made in the same plan to replace it starts its count again.
	replaced := slices.ContainsFunc(res.CreatePods, func(p *corev1.Pod) bool { return p.Name == e.Name })
	if seen == nil || seen.UID != e.UID || replaced {
		return
	}
	alone, known := observe.NodeRestarts(seen)
	if !known {
		return
	}
	st := res.Status.DeepCopy()
	expandTasks(s.job, st)
	for _, rs := range st.Roles {
		for _, ts := range rs.Tasks {
			if ts.Pod == e.Name && ts.NodeRestarts != alone {
				s.fatalf("step %d: the end of %s is counted with %d of its node's %d restarts alone charged", step, e.Name, ts.NodeRestarts, alone)
			}
		}
	}
}

// instanceKey names one instance of a task's pod.
func instanceKey(uid types.UID, instance int32) string { return fmt.Sprintf("%s#%d", uid, instance) }

// remember keeps the world's pods as they are now, for a cache to be
// behind by.
func (s *sim) remember() {
	past := make(map[string]*corev1.Pod, len(s.pods))
	for name, p := range s.pods {
		past[name] = p.DeepCopy()
	}
	s.pasts = append(s.pasts, past)
	if len(s.pasts) > maxPasts {
		s.pasts = s.pasts[1:]
	}
}

// removedAtOnce is whether a plan's own actions take pod out of the API
// before they create anything: a forced delete of a pod nothing else holds,
// or the release of a pod deleted without grace.
func removedAtOnce(res Result, pod *corev1.Pod) bool {
	for _, d := range res.DeletePods {
		if d.UID == pod.UID && d.Force && observe.GoneOnForcedDelete(pod) {
			return true
		}
	}
	for _, r := range res.ReleaseAtOnce {
		if r.UID == pod.UID && observe.GoneOnRelease(pod) {
			return true
		}
	}
	return false
}

// reconcile is one pass of the operator, which may die before it writes
// status or between writing and acting.
func (s *sim) reconcile(step int) {
	s.t.Helper()
	defer s.remember()
	view, lagged := s.pods, s.cache != nil
	if lagged {
		view = s.cache
	}
	res := s.planOn(view)
	// reflect.DeepEqual, many times faster than cmp.Equal on a plan's pods;
	// cmp only to say how they differ.
	if again := s.planOn(view); !reflect.DeepEqual(res, again) {
		s.fatalf("step %d: the same input gave two plans:\n%s", step, cmp.Diff(res, again))
	}
	for _, p := range res.CreatePods {
		if held := view[p.Name]; held != nil && !removedAtOnce(res, held) {
			s.fatalf("step %d: creates %s while pod %s (phase %s, deleting %v) holds the name",
				step, p.Name, held.UID, held.Status.Phase, held.DeletionTimestamp != nil)
		}
	}
	s.log = append(s.log, describePlan(res)...)
	// What befalls this reconcile is drawn first, so that two simulations
	// in lockstep draw alike whatever their plans are.
	hold, early, crash := s.rnd.IntN(2) == 0, s.rnd.IntN(2) == 0, s.rnd.IntN(10)
	if !s.confirm(res) {
		return
	}
	wasFinished := s.job.Status.Finished()
	if wasFinished && len(res.CreatePods) > 0 {
		s.fatalf("step %d: a finished job creates %d pods", step, len(res.CreatePods))
	}
	if hold && !s.writeAll && ProgressOnly(s.job, res) {
		// The operator holds a status that only shows progress for a
		// later write (its status batch).
		s.log = append(s.log, "progress held")
		return
	}
	// A starting job's first status may wait for the write that finds its
	// pods running (--status-batch-start): the plan is acted on, its
	// status left unwritten.
	unwritten, kept := hold && !s.writeAll && StartOnly(s.job, res), s.job.Status
	if unwritten {
		s.log = append(s.log, "start left unwritten")
	}
	// The pods the plan took for gone are released beside the status
	// write: a crash before the write may come after their release.
	switch crash {
	case 0:
		if early {
			s.release(res.ReleaseAtOnce)
			s.log = append(s.log, "released at once")
		}
		s.log = append(s.log, "crash before the status write")
		s.confirmed = false
		return
	case 1:
		s.release(res.ReleaseAtOnce)
		s.job.Status = res.Status
		s.countEnds(step, res, view)
		s.log = append(s.log, "crash between the status write and the actions")
		s.confirmed = false
	case 2:
		s.applyCut(res)
		s.countEnds(step, res, view)
		s.confirmed = false
	default:
		s.apply(res)
		s.countEnds(step, res, view)
		// The operator waits for its cache to show its own writes
		// (controller expectations): it has caught up by then.
		s.cache = nil
		for _, p := range s.pods {
			// A plan on a cache that is behind has yet to see the
			// stranded deletion: the cache catching up brings the next.
			if observe.DeletionStranded(p) && !lagged {
				s.fatalf("step %d: pod %s stays marked deleting with nothing to remove it", step, p.Name)
			}
		}
	}
	if unwritten {
		s.job.Status = kept
	}
	s.check(step, wasFinished)
}

// apply writes status and carries out the actions, as world.step does.
func (s *sim) apply(res Result) {
	s.release(res.ReleaseAtOnce)
	s.job.Status = res.Status
	s.release(res.ReleasePods)
	for _, d := range res.DeletePods {
		if p := s.pods[d.Name]; p != nil && p.UID == d.UID {
			delete(s.pods, d.Name)
		}
	}
	for _, r := range res.RestartPods {
		s.restartInPlace(r)
	}
	for _, p := range res.CreatePods {
		s.create(p)
	}
}

// restartInPlace carries out an in-place restart as the API server takes
// the operator's patch: the pod, if it is that instance still, moves to
// its next one.
func (s *sim) restartInPlace(r PodRestart) {
	p := s.pods[r.Name]
	if p == nil || p.UID != r.UID {
		return
	}
	p.Labels[musterv1.LabelJobAttempt] = strconv.Itoa(int(r.Attempt))
	p.Labels[musterv1.LabelTaskAttempt] = strconv.Itoa(int(r.TaskAttempt))
	p.Annotations[musterv1.AnnotationInPlaceRestarts] = strconv.Itoa(int(r.Restarts))
	s.made[p.Name] = append(s.made[p.Name], madePod{uid: p.UID, attempt: r.TaskAttempt})
}

// nodeRestarted reports a pod that restarts in place as running after
// every restart asked of it, as kubelet 1.36 does.
func (s *sim) nodeRestarted(p *corev1.Pod) { kubelet.RestartedAsAsked(p, s.now) }

// restartedAlone is, for a pod that restarts in place, its training
// container failing with a code its restart rule retries: it is restarted
// alone, its exit kept as its last end, and the pod runs on. Other codes
// end the pod as anywhere.
func (s *sim) restartedAlone(p *corev1.Pod, code int32) bool {
	if observe.InPlaceOf(p) == observe.NotInPlace || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Spec.Containers {
		for _, rule := range c.RestartPolicyRules {
			if rule.ExitCodes.Operator == corev1.ContainerRestartRuleOnExitCodesOpNotIn && slices.Contains(rule.ExitCodes.Values, code) {
				return false
			}
		}
		if len(c.RestartPolicyRules) == 0 {
			return false
		}
	}
	kubelet.RestartedAlone(p, code, s.now)
	if s.failedInPlace == nil {
		s.failedInPlace = map[string]bool{}
	}
	s.failedInPlace[instanceKey(p.UID, observe.TaskAttempt(p))] = true
	s.log = append(s.log, fmt.Sprintf("exit %s %d, restarted alone", p.Name, code))
	return true
}

// create makes a pod, unless its name is taken: a plan made on a cache
// that is behind may ask for one, and the API server refuses it.
func (s *sim) create(p *corev1.Pod) {
	if s.pods[p.Name] != nil {
		s.log = append(s.log, "  create "+p.Name+": AlreadyExists")
		return
	}
	s.uids++
	p.UID = types.UID(fmt.Sprintf("sim-uid-%d", s.uids))
	p.Status.Phase = corev1.PodPending
	p.CreationTimestamp = metav1.NewTime(s.now)
	s.pods[p.Name] = p
	if s.made == nil {
		s.made = map[string][]madePod{}
	}
	s.made[p.Name] = append(s.made[p.Name], madePod{uid: p.UID, attempt: observe.TaskAttempt(p)})
}

// applyCut acts like apply until the first forced delete the API server
// carries out in two steps, and crashes between them: the pod stays marked
// deleting, with nothing to hold or remove it.
func (s *sim) applyCut(res Result) {
	s.release(res.ReleaseAtOnce)
	s.job.Status = res.Status
	s.release(res.ReleasePods)
	for _, d := range res.DeletePods {
		p := s.pods[d.Name]
		if p == nil || p.UID != d.UID {
			continue
		}
		if d.Force && len(p.Finalizers) == 0 && p.DeletionTimestamp == nil {
			p.DeletionTimestamp = new(metav1.NewTime(s.now))
			p.DeletionGracePeriodSeconds = new(int64(0))
			s.log = append(s.log, "crash in the forced delete of "+p.Name)
			return
		}
		delete(s.pods, d.Name)
	}
	s.log = append(s.log, "crash before the creates")
}

func (s *sim) check(step int, wasFinished bool) {
	s.t.Helper()
	st, prev := s.job.Status, s.prev
	for _, c := range []struct {
		what      string
		now, then int32
	}{
		{"restarts.total", st.Restarts.Total, prev.Restarts.Total},
		{"restarts.accountable", st.Restarts.Accountable, prev.Restarts.Accountable},
		{"retries.total", st.Retries.Total, prev.Retries.Total},
		{"retries.accountable", st.Retries.Accountable, prev.Retries.Accountable},
		{"attempt", st.Attempt, prev.Attempt},
	} {
		if c.now < c.then {
			s.fatalf("step %d: %s went down from %d to %d", step, c.what, c.then, c.now)
		}
	}
	// Past the budget only through restarts a node made alone, which no
	// operator can stop (it was away, or the pod was restarting): they are
	// charged as they happened, and the job then ends.
	if limit := failure.BudgetOf(s.job).Limit; st.Restarts.Accountable > limit && (s.inPlace.WatcherImage == "" || !st.Finished()) {
		s.fatalf("step %d: %d accountable restarts exceed backoffLimit %d", step, st.Restarts.Accountable, limit)
	}
	if st.Restarts.Accountable > st.Restarts.Total {
		s.fatalf("step %d: accountable %d > total %d", step, st.Restarts.Accountable, st.Restarts.Total)
	}
	// Every status the fuzzer's lifetimes plan; every tenth step of the
	// seeded ones, which would take several times as long otherwise.
	if (s.longText || step%10 == 0) && !reflect.DeepEqual(st, prev) {
		if errs := apiServer().ValidateStatus(&st); len(errs) > 0 {
			s.fatalf("step %d: the API server would refuse the status: %v", step, errs.ToAggregate())
		}
	}
	if wasFinished && !st.Finished() {
		s.fatalf("step %d: a finished job is no longer finished: %+v", step, st.Conditions)
	}
	for _, rs := range st.Roles {
		seen := map[int32]bool{}
		for _, task := range rs.Tasks {
			if seen[task.Index] {
				s.fatalf("step %d: role %s has task %d twice", step, rs.Name, task.Index)
			}
			seen[task.Index] = true
		}
		if !slices.IsSortedFunc(rs.Tasks, func(a, b musterv1.TaskStatus) int { return int(a.Index - b.Index) }) {
			s.fatalf("step %d: role %s's tasks are out of order", step, rs.Name)
		}
	}
	s.prev = *st.DeepCopy()
}

// TestSummaryChangesNoDecision runs every simulation twice in lockstep, with
// status written in full and in its short form, and checks that the two
// make the same decision at every step: the short form leaves out only what
// the pods show or what no decision reads.
func TestSummaryChangesNoDecision(t *testing.T) {
	for name, job := range simJobs() {
		for seed := uint64(1); seed <= 25; seed++ {
			t.Run(fmt.Sprintf("%s/seed-%d", name, seed), func(t *testing.T) {
				short := &sim{world: newWorld(t, job.DeepCopy()), rnd: rand.New(rand.NewPCG(seed, 7))}
				full := &sim{world: newWorld(t, job.DeepCopy()), rnd: rand.New(rand.NewPCG(seed, 7))}
				full.full = true
				short.writeAll, full.writeAll = true, true
				short.noLag, full.noLag = true, true
				for i := 0; i < 300; i++ {
					short.event()
					full.event()
					a, b := short.plan(), full.plan()
					if diff := cmp.Diff(decisions(full, b), decisions(short, a)); diff != "" {
						short.fatalf("step %d: the short status decided otherwise (-full +short):\n%s", i, diff)
					}
					short.reconcile(i)
					full.reconcile(i)
				}
			})
		}
	}
}

// decision is what a plan decided, with status tasks as the planner reads
// them.
type decision struct {
	Creates, Deletes []string
	Scale            *int32
	Delete           bool
	Requeue          time.Duration
	Events           []Event
	Phase            musterv1.JobPhase
	Restarts         musterv1.RestartCounts
	Retries          musterv1.RestartCounts
	Attempt          int32
	Completion       *musterv1.CompletionStatus
	Tasks            []string
}

func decisions(s *sim, res Result) decision {
	d := decision{Scale: res.Scale, Delete: res.DeleteJob, Requeue: res.RequeueAfter, Events: res.Events,
		Phase: res.Status.Phase, Restarts: res.Status.Restarts, Retries: res.Status.Retries, Attempt: res.Status.Attempt,
		Completion: res.Status.Completion}
	for _, p := range res.CreatePods {
		d.Creates = append(d.Creates, p.Name+"#"+p.Labels[musterv1.LabelTaskAttempt])
	}
	for _, p := range res.DeletePods {
		d.Deletes = append(d.Deletes, fmt.Sprintf("%s/%s/%v", p.Name, p.UID, p.Force))
	}
	st := *res.Status.DeepCopy()
	expandTasks(s.job, &st)
	for _, rs := range st.Roles {
		for _, t := range rs.Tasks {
			d.Tasks = append(d.Tasks, fmt.Sprintf("%s/%d %s r%d/%d pending-deletion=%v", rs.Name, t.Index, t.State,
				t.Restarts, t.AccountableRestarts, t.DeletionPending))
		}
	}
	return d
}

// describePlan is a plan in a few lines, for the simulation's trace: what
// it creates, deletes and releases, the events it raises, and the job's
// phase and counters as it would write them.
func describePlan(res Result) []string {
	var out []string
	names := func(verb string, n []string) {
		if len(n) > 0 {
			out = append(out, "  "+verb+" "+strings.Join(n, " "))
		}
	}
	var creates, deletes, releases, restarts []string
	for _, p := range res.CreatePods {
		creates = append(creates, p.Name)
	}
	for _, r := range res.RestartPods {
		restarts = append(restarts, fmt.Sprintf("%s(%d.%d)", r.Name, r.Attempt, r.TaskAttempt))
	}
	for _, d := range res.DeletePods {
		del := d.Name + "(" + d.Reason
		if d.Force {
			del += ", forced"
		}
		deletes = append(deletes, del+")")
	}
	for _, r := range append(slices.Clone(res.ReleaseAtOnce), res.ReleasePods...) {
		releases = append(releases, r.Name)
	}
	names("create", creates)
	names("restart in place", restarts)
	names("delete", deletes)
	names("release", releases)
	for _, e := range res.Events {
		out = append(out, "  event "+string(e.Reason)+": "+e.Message)
	}
	st := res.Status
	out = append(out, fmt.Sprintf("  status %s, attempt %d, restarts %d/%d, retries %d/%d",
		st.Phase, st.Attempt, st.Restarts.Accountable, st.Restarts.Total, st.Retries.Accountable, st.Retries.Total))
	return out
}

// TestSimulationTraces keeps, for each of the simulation's jobs, the trace
// of one seeded run (the world's events, what each plan did, the crashes)
// in testdata/simulation/*.golden: a change of behaviour shows in review as
// a change of trace. Regenerate them with
//
//	go test ./internal/plan/ -run TestSimulationTraces -update
func TestSimulationTraces(t *testing.T) {
	jobs := simJobs()
	names := slices.Sorted(maps.Keys(jobs))
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s := &sim{world: newWorld(t, jobs[name].DeepCopy()), rnd: rand.New(rand.NewPCG(1, 7))}
			for i := range 60 {
				s.log = append(s.log, fmt.Sprintf("step %d", i))
				s.event()
				s.reconcile(i)
			}
			file := filepath.Join("testdata", "simulation", slug(name)+".golden")
			got := strings.Join(s.log, "\n") + "\n"
			testutil.Golden(t, file, got)
		})
	}
}

// slug is a name fit for a file: its words joined by dashes.
func slug(name string) string {
	return strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == ',' }), "-")
}
