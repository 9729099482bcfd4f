package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/procstat"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/tools/devcluster"
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = musterv1.AddToScheme(s)
	return s
}

// floorLabelDomain stands for Muster's label domain on the floor's pods:
// as long, and not Muster's.
const floorLabelDomain = "floor.test"

// floorTaskIndexLabel is Muster's task index label on the floor's pods.
var floorTaskIndexLabel = floorLabelDomain + "/" + strings.TrimPrefix(musterv1.LabelTaskIndex, musterv1.GroupVersion.Group+"/")

// The floor is the fastest plain client: this rate, this many creators.
const (
	floorQPS      = 500
	floorBurst    = 1000
	floorCreators = 32
)

// fakePodSpec lands on KWOK nodes, which make pods Running without running
// anything.
func fakePodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector: map[string]string{devcluster.FakeNodeLabel: devcluster.FakeNodeLabelValue},
		Tolerations: []corev1.Toleration{{Key: devcluster.FakeNodeTaintKey, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule}},
		Containers:    []corev1.Container{{Name: "main", Image: "fake", Command: []string{"sleep", "inf"}}},
		RestartPolicy: corev1.RestartPolicyNever,
	}
}

// side is one side of a scenario, Muster's or the floor's.
type side struct {
	all time.Duration
	// created and bound are when the last pod was first seen, and first
	// seen on a node.
	created, bound time.Duration
	perJob         []time.Duration // sorted
	reqs           requests
	// cpu is the CPU seconds each control-plane component and the
	// operator spent, by component.
	cpu map[string]float64
	// terminated are the watches the API server closed because their
	// client fell behind (each one re-watches, or lists everything again),
	// by resource.
	terminated watchCounts
	// ops is what the operator's counters moved by (its reconciles, status
	// writes, cache waits).
	ops counters
	// replaced are delete -> replacement Running, and replacedMade delete
	// -> replacement made (first seen), each sorted.
	replaced, replacedMade []time.Duration
	// replacedOne and replacedOneMade are the same for pods deleted one at
	// a time, on a cluster at rest.
	replacedOne, replacedOneMade []time.Duration
	// replacing is what the operator's timings moved by while the
	// replacements were made.
	replacing counters
	// replacedReqs and replacedOneReqs are every client's requests from
	// the first pod deleted until the writes settle after the last
	// replacement runs.
	replacedReqs, replacedOneReqs requests
	// peakRSS is the operator's peak resident memory while this side ran,
	// in MiB; 0 on the floor's side.
	peakRSS float64
	// restarted is what restarting the operator cost once the side's pods
	// all ran, where the scenario asks for it.
	restarted *operatorRestart
}

// scenario is jobs jobs of perJob pods, made at once by Muster and by
// each of its floors, runs times over.
type scenario struct {
	name         string
	jobs, perJob int
	replace      int
	replaceOne   int
	// kinds are the sides each run measures, in turn; once are measured
	// once, after the runs, for the record.
	kinds, once []sideKind
	runs        int
	// sides are each kind's runs, in the order they ran.
	sides map[sideKind][]*side
	// jobBytes is the size of the largest TrainingJob object, in bytes.
	jobBytes int
	load     string
	// restartOperator restarts the operator on Muster's side once its
	// pods all run (-operator-restart).
	restartOperator bool
}

// runScenario measures every side of s, s.runs times. Each run starts
// with the next side (the order turns by one): no side always measures
// right after the same other, or always first on a cluster at rest.
func (b *bench) runScenario(ctx context.Context, s *scenario) error {
	s.sides = map[sideKind][]*side{}
	for r := range s.runs {
		for _, k := range turned(s.kinds, r) {
			if err := b.runSide(ctx, s, k, r); err != nil {
				return err
			}
		}
	}
	for _, k := range s.once {
		if err := b.runSide(ctx, s, k, 0); err != nil {
			return err
		}
	}
	s.load = loadAverage()
	return nil
}

// turned are kinds in run r's order: turned by r.
func turned(kinds []sideKind, r int) []sideKind {
	out := make([]sideKind, len(kinds))
	for i := range kinds {
		out[i] = kinds[(i+r)%len(kinds)]
	}
	return out
}

// runSide measures one side of s, its run r.
func (b *bench) runSide(ctx context.Context, s *scenario, kind sideKind, r int) error {
	ns := fmt.Sprintf("bench-%s-%s-%d", s.name, strings.ToLower(string(kind)), r)
	b.logf("%s, run %d: %d jobs of %d pods, %s", s.name, r+1, s.jobs, s.perJob, kind)
	out := &side{}
	var err error
	switch kind {
	case sideMuster:
		err = b.musterSide(ctx, s, ns, out)
	case sideF2Upstream:
		err = b.upstreamJobController(ctx, func() error { return b.floorSide(ctx, s, kind, ns, out) })
	default:
		err = b.floorSide(ctx, s, kind, ns, out)
	}
	if err != nil {
		return fmt.Errorf("%s, %s, run %d: %w", s.name, kind, r+1, err)
	}
	s.sides[kind] = append(s.sides[kind], out)
	return nil
}

// upstreamJobController runs measure with kube-controller-manager at
// upstream's default client rates (20 QPS, burst 30), then puts the
// bench's back.
func (b *bench) upstreamJobController(ctx context.Context, measure func() error) error {
	restart := func(qps, burst int) error {
		if err := devcluster.RestartControllerManager(ctx, b.cfg, qps, burst); err != nil {
			return err
		}
		pid, ok := b.cfg.ComponentPID("kube-controller-manager")
		if !ok {
			return fmt.Errorf("kube-controller-manager did not start again")
		}
		b.procs["kube-controller-manager"] = process{pid}
		// Its first lists and syncs are not the side's.
		_, err := b.settle(ctx)
		return err
	}
	if err := restart(20, 30); err != nil {
		return err
	}
	err := measure()
	if rerr := restart(operatorQPS, operatorBurst); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// The operator's client rates (its --kube-api-qps and --kube-api-burst
// defaults), at which the bench runs the built-in Job controller.
const (
	operatorQPS   = 500
	operatorBurst = 1000
)

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	load, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(load))[:3], " ")
}

// measure runs begin, which starts the work, waits for every pod to run
// and for the API server's writes to settle, and fills in what it cost.
// operator says whether this side is the operator's, whose CPU is then
// profiled too.
func (b *bench) measure(ctx context.Context, ns string, pods int, out *side, operator bool, begin func() error) error {
	before, err := b.usage(ctx, nil)
	if err != nil {
		return err
	}
	profiled := b.profileCPU(ctx, ns, operator)
	start := time.Now()
	if err := begin(); err != nil {
		return err
	}
	last, err := b.track.wait(ctx, ns, start, pods, 30*time.Minute)
	if err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	out.all = last.Sub(start)
	out.created, out.bound = b.track.lastOf(b.track.created, ns, start), b.track.lastOf(b.track.bound, ns, start)
	out.perJob = b.track.perJob(ns, start)
	after, err := b.settledUsage(ctx)
	if err != nil {
		return err
	}
	spent := after.minus(before)
	out.reqs, out.terminated, out.cpu, out.ops = spent.api.requests, spent.api.terminatedWatches, spent.cpu, spent.ops
	return nil
}

// usage is what a measured window costs, read before and after it: the
// API server's requests, each measured process's CPU seconds, the
// operator's counters.
type usage struct {
	api apiCounters
	cpu map[string]float64
	ops counters
}

// usage reads it now; api is the API server's counters if the caller has
// just read them, nil to read them here.
func (b *bench) usage(ctx context.Context, api *apiCounters) (usage, error) {
	if api == nil {
		read, err := scrapeAPI(ctx, b.cs)
		if err != nil {
			return usage{}, err
		}
		api = &read
	}
	ops, err := b.opMetrics.scrape(ctx)
	if err != nil {
		return usage{}, err
	}
	return usage{api: *api, cpu: b.cpuSeconds(), ops: ops}, nil
}

// settledUsage waits for the API server's writes to settle, then reads
// the usage.
func (b *bench) settledUsage(ctx context.Context) (usage, error) {
	api, err := b.settle(ctx)
	if err != nil {
		return usage{}, err
	}
	return b.usage(ctx, &api)
}

func (u usage) minus(before usage) usage {
	cpu := make(map[string]float64, len(u.cpu))
	for name, v := range u.cpu {
		cpu[name] = v - before.cpu[name]
	}
	return usage{api: u.api.minus(before.api), cpu: cpu, ops: u.ops.minus(before.ops)}
}

// settle waits until the API server has taken no write for two readings
// a second apart (trailing status and endpoint updates count), at most a
// minute, and returns the last reading.
func (b *bench) settle(ctx context.Context) (apiCounters, error) {
	prev, err := scrapeAPI(ctx, b.cs)
	if err != nil {
		return apiCounters{}, err
	}
	quiet := 0
	for range 60 {
		time.Sleep(time.Second)
		cur, err := scrapeAPI(ctx, b.cs)
		if err != nil {
			return apiCounters{}, err
		}
		if cur.requests.minus(prev.requests).writes() == 0 {
			quiet++
			if quiet == 2 {
				return cur, nil
			}
		} else {
			quiet = 0
		}
		prev = cur
	}
	return prev, nil
}

func jobName(i int) string { return fmt.Sprintf("job-%04d", i) }

func (b *bench) musterSide(ctx context.Context, s *scenario, ns string, out *side) error {
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	// The peak starts again from what the operator holds now, so that it
	// is this scenario's, not the largest one's before it.
	if err := b.operator.resetPeakRSS(); err != nil {
		return err
	}
	err := b.measure(ctx, ns, s.jobs*s.perJob, out, true, func() error {
		var mu sync.Mutex
		var createErr error
		workqueue.ParallelizeUntil(ctx, 16, s.jobs, func(i int) {
			job := benchJob(ns, jobName(i), s.perJob)
			if err := b.c.Create(ctx, job); err != nil {
				mu.Lock()
				createErr = err
				mu.Unlock()
			}
		})
		return createErr
	})
	if err != nil {
		return err
	}
	// Every pod is in the operator's cache now: its heap is at its largest.
	if err := b.profileOperatorHeap(ctx, ns); err != nil {
		return err
	}
	var jobs musterv1.TrainingJobList
	if err := b.c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range jobs.Items {
		raw, err := json.Marshal(&jobs.Items[i])
		if err != nil {
			return err
		}
		s.jobBytes = max(s.jobBytes, len(raw))
	}
	before, err := b.opMetrics.scrape(ctx)
	if err != nil {
		return err
	}
	if err := b.replacements(ctx, s, sideMuster, ns, out); err != nil {
		return err
	}
	after, err := b.opMetrics.scrape(ctx)
	if err != nil {
		return err
	}
	out.replacing = after.minus(before)
	out.peakRSS = b.operator.peakRSS()
	if s.restartOperator {
		if out.restarted, err = b.restartOperator(ctx, s.jobs); err != nil {
			return err
		}
	}
	return b.deleteNamespace(ctx, ns)
}

// replacements times the side's replacements: s.replace pods deleted at
// once, then s.replaceOne one at a time.
func (b *bench) replacements(ctx context.Context, s *scenario, kind sideKind, ns string, out *side) error {
	var err error
	if s.replace > 0 {
		if out.replacedMade, out.replaced, out.replacedReqs, err = b.replace(ctx, kind, ns, s.replace); err != nil {
			return err
		}
	}
	if s.replaceOne > 0 {
		if out.replacedOneMade, out.replacedOne, out.replacedOneReqs, err = b.replaceOne(ctx, kind, ns, s.replaceOne, s.replace, s.jobs, s.perJob); err != nil {
			return err
		}
	}
	return nil
}

// floorService is the job's Service as Muster makes it: headless,
// publishing not-ready pods.
func floorService(job string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: job, Labels: map[string]string{jobLabel: job}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{jobLabel: job},
			PublishNotReadyAddresses: true},
	}
}

// floorPod is the floor's pod of one task of job: Muster's, or the
// template alone (what says which).
func floorPod(what string, job *musterv1.TrainingJob, index int) *corev1.Pod {
	if what == floorPodsSame {
		return sameAsMusterPod(job, index)
	}
	name := fmt.Sprintf("%s-worker-%d", job.Name, index)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{jobLabel: job.Name}},
		Spec: func() corev1.PodSpec {
			s := fakePodSpec()
			s.Hostname, s.Subdomain = name, job.Name
			return s
		}(),
	}
}

// benchJob is the job Muster's side asks for.
func benchJob(ns, name string, perJob int) *musterv1.TrainingJob {
	return testutil.MakeJob(name, ns).Role("worker", int32(perJob)).
		RestartPolicy(musterv1.RestartPolicyOnFailure).
		Template(func(p *corev1.PodTemplateSpec) {
			p.Labels = map[string]string{jobLabel: name}
			p.Spec = fakePodSpec()
		}).Obj()
}

// floorJob is benchJob with the UID the API server would have given it,
// for the floor's pods to carry.
func floorJob(ns, name string, perJob int) *musterv1.TrainingJob {
	j := benchJob(ns, name, perJob)
	j.UID = uuid.NewUUID()
	return j
}

// sameAsMusterPod is the pod Muster makes for a task of a floorJob, less
// what only the operator needs (its owner reference and tracking
// finalizer): the environment, labels and annotation a plain client that
// tells each task who it is writes too. Its label keys are renamed,
// keeping their length, so that the operator does not take it for one of
// its own.
func sameAsMusterPod(job *musterv1.TrainingJob, index int) *corev1.Pod {
	pod, err := objects.DesiredPod(job, &job.Spec.Roles[0], int32(index), 0)
	if err != nil {
		panic(err) // the bench's own job: a bug here, not an input
	}
	pod.OwnerReferences, pod.Finalizers = nil, nil
	l := make(map[string]string, len(pod.Labels))
	for k, v := range pod.Labels {
		if name, ok := strings.CutPrefix(k, musterv1.GroupVersion.Group+"/"); ok {
			k = floorLabelDomain + "/" + name
		}
		l[k] = v
	}
	pod.Labels = l
	return pod
}

// recreateOnDelete is the gang restarts' plain client: the first pod its
// watch sees failed has it delete every pod of ns at once (grace 0, with
// its creators), and it makes each pod again as soon as it sees it gone.
func (b *bench) recreateOnDelete(ns string, jobs map[string]*musterv1.TrainingJob, stop <-chan struct{}) error {
	f := informers.NewSharedInformerFactoryWithOptions(b.floorCS, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	var restarted atomic.Bool
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) {
			p, ok := cur.(*corev1.Pod)
			if !ok || p.Status.Phase != corev1.PodFailed || !restarted.CompareAndSwap(false, true) {
				return
			}
			all := inf.GetStore().List()
			go workqueue.ParallelizeUntil(context.Background(), floorCreators, len(all), func(i int) {
				if p, ok := all[i].(*corev1.Pod); ok {
					_ = deletePodNow(context.Background(), b.floorCS, ns, p.Name)
				}
			})
		},
		DeleteFunc: func(obj any) {
			pod := deletedPod(obj)
			if pod == nil {
				return
			}
			go func() {
				_, _ = b.floorCS.CoreV1().Pods(ns).Create(context.Background(), floorPod(b.o.floorPods, jobs[pod.Labels[jobLabel]], podIndex(pod.Name)), metav1.CreateOptions{})
			}()
		},
	})
	if err != nil {
		return err
	}
	f.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		return fmt.Errorf("the floor's pod watch did not sync")
	}
	return nil
}

func podIndex(name string) int {
	i, _ := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	return i
}

// replace deletes worker 0 of the first n jobs of ns at once, grace 0, and
// returns, sorted, how long each took to be made again and to be Running
// again, and every client's requests until the writes settle.
func (b *bench) replace(ctx context.Context, kind sideKind, ns string, n int) (made, running []time.Duration, reqs requests, err error) {
	b.logf("deleting one pod of %d jobs in %s", n, ns)
	pods := make([]*corev1.Pod, n)
	for i := range n {
		if pods[i], err = b.taskPod(ctx, kind, ns, jobName(i), 0); err != nil {
			return nil, nil, nil, err
		}
	}
	before, err := b.settle(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	deleted := map[string]time.Time{}
	start := time.Now()
	for i, pod := range pods {
		deleted[taskKey(jobName(i), 0)] = time.Now()
		if err := b.lose(ctx, kind, pod); err != nil {
			return nil, nil, nil, err
		}
	}
	if _, err := b.track.wait(ctx, ns, start, n, 10*time.Minute); err != nil {
		return nil, nil, nil, err
	}
	after, err := b.settle(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	made, running = b.track.replacements(ns, start, deleted)
	return made, running, after.requests.minus(before.requests), nil
}

// replaceOne deletes a pod of each of n jobs of ns, grace 0, one at a
// time: each once the one before runs again and the cluster's writes have
// settled, so that nothing batches it with another. It takes the jobs
// after the first skip, which lost a pod at once, where there are enough
// (a job's second loss in a row may wait out a back-off the first did
// not: the Job controller's), and worker 1 where there is one. It
// returns the same as replace, the requests summed over the n windows.
func (b *bench) replaceOne(ctx context.Context, kind sideKind, ns string, n, skip, jobs, perJob int) (made, running []time.Duration, reqs requests, err error) {
	if skip+n > jobs {
		skip = 0
	}
	b.logf("deleting one pod of %d jobs in %s, one at a time", n, ns)
	before, err := b.settle(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	reqs = requests{}
	index := min(1, perJob-1)
	for i := range n {
		job := jobName(skip + i)
		pod, err := b.taskPod(ctx, kind, ns, job, index)
		if err != nil {
			return nil, nil, nil, err
		}
		start := time.Now()
		if err := b.lose(ctx, kind, pod); err != nil {
			return nil, nil, nil, err
		}
		if _, err := b.track.wait(ctx, ns, start, 1, 5*time.Minute); err != nil {
			return nil, nil, nil, err
		}
		m, r := b.track.replacements(ns, start, map[string]time.Time{taskKey(job, index): start})
		made, running = append(made, m...), append(running, r...)
		after, err := b.settle(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		reqs.add(after.requests.minus(before.requests))
		before = after
	}
	sortDurations(made)
	sortDurations(running)
	return made, running, reqs, nil
}

func (b *bench) namespace(ctx context.Context, name string) error {
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// deleteNamespace deletes ns and waits until it is gone, so the next
// measurement shares the API server with nothing.
func (b *bench) deleteNamespace(ctx context.Context, ns string) error {
	if err := b.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		_, err := b.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("namespace %s still there after 15 minutes", ns)
}

// floorClient is the plain client of the gang restarts: the floor's
// ServiceAccount, built-in kinds in protobuf, as the floors' processes
// are.
func floorClient(kubeconfig string) (kubernetes.Interface, error) {
	rest, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rest.QPS, rest.Burst = floorQPS, floorBurst
	rest.ContentType = runtime.ContentTypeProtobuf
	rest.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return kubernetes.NewForConfig(rest)
}

// process is a host process the bench measures.
type process struct{ pid int }

// measured are the processes whose CPU the bench reports, in its order:
// the control plane's components, KWOK and the operator.
var measured = []string{"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok", operatorName, floorClientName}

const operatorName = "muster-operator"

// cpuSeconds reads the CPU time of every measured process.
func (b *bench) cpuSeconds() map[string]float64 {
	out := make(map[string]float64, len(b.procs))
	for name, p := range b.procs {
		out[name] = p.cpuSeconds()
	}
	return out
}

func operatorProcess() (process, error) {
	out, err := exec.Command("pgrep", "-f", "(^|/)muster-operator --leader-elect").Output()
	if err != nil {
		return process{}, fmt.Errorf("finding the operator's process: %w", err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(out))[0])
	return process{pid}, err
}

// cpuSeconds is the process's user+system CPU time.
func (p process) cpuSeconds() float64 {
	st, err := procstat.Read(p.pid)
	if err != nil {
		return 0
	}
	return float64(st.CPUTicks) / procstat.TicksPerSecond
}

// resetPeakRSS makes the process's peak resident memory start again from
// what it holds now (proc(5), clear_refs).
func (p process) resetPeakRSS() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0)
}

// peakRSS is the process's peak resident memory, in MiB, since it started
// or since resetPeakRSS.
func (p process) peakRSS() float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}
