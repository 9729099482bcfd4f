package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/tools/devcluster"
)

// sideKind is who does a scenario's work: Muster, or one of the floors.
type sideKind string

const (
	// sideMuster is the operator: TrainingJobs created at once.
	sideMuster sideKind = "Muster"
	// sideF0 is a plain client making each job's Service and pods: no job
	// object at all, the lower bound.
	sideF0 sideKind = "F0"
	// sideF1 is F0 plus, per job, an object of a minimal CRD made before
	// its pods, which it owns and holds with a finalizer, and two status
	// writes: the cheapest way to give a user what Muster gives.
	sideF1 sideKind = "F1"
	// sideF1s is F1 with Muster's own CRD schema and CEL rules, under
	// another group: what the API's schema costs, apart from the operator.
	sideF1s sideKind = "F1s"
	// sideF1n is F1 with a new pod name for each attempt of a task, its
	// hostname kept: a replacement is made as soon as its predecessor is
	// seen going, beside the release, not once the release has freed the
	// name. What per-attempt names could save, and what they cost: for a
	// while a task has two pods.
	sideF1n sideKind = "F1n"
	// sideF2 is built in: one Indexed Job and a headless Service per job,
	// through kube-controller-manager at the operator's client rates.
	sideF2 sideKind = "F2"
	// sideF2Upstream is F2 with kube-controller-manager at upstream's
	// default rates (20 QPS, burst 30), for the record.
	sideF2Upstream sideKind = "F2-upstream"
)

// sideKinds are every kind, in the report's order.
var sideKinds = []sideKind{sideMuster, sideF0, sideF1, sideF1s, sideF1n, sideF2, sideF2Upstream}

func parseSideKind(s string) (sideKind, error) {
	for _, k := range sideKinds {
		if strings.EqualFold(s, string(k)) {
			return k, nil
		}
	}
	return "", fmt.Errorf("%q: one of %v", s, sideKinds)
}

// objectFloor says whether k keeps a job object of its own (F1, F1s, F1n).
func (k sideKind) objectFloor() bool { return k == sideF1 || k == sideF1s || k == sideF1n }

// namesAttempts says whether k names each attempt's pod apart (F1n).
func (k sideKind) namesAttempts() bool { return k == sideF1n }

// builtIn says whether k's pods are the Job controller's (F2).
func (k sideKind) builtIn() bool { return k == sideF2 || k == sideF2Upstream }

// The object floors' CRDs: F1's minimal one, F1s's Muster's schema.
var (
	f1Resource  = schema.GroupVersionResource{Group: "f1.bench.test", Version: "v1", Resource: "floorjobs"}
	f1sResource = schema.GroupVersionResource{Group: "f1s.bench.test", Version: musterv1.GroupVersion.Version, Resource: "trainingjobs"}
)

// floorFinalizer holds an object floor's pods until its client has seen
// them go, as Muster's tracking finalizer holds Muster's.
const floorFinalizer = "bench.test/tracking"

func (k sideKind) resource() schema.GroupVersionResource {
	if k == sideF1s {
		return f1sResource
	}
	return f1Resource
}

func (k sideKind) objectKind() string {
	if k == sideF1s {
		return "TrainingJob"
	}
	return "FloorJob"
}

// The floor's client runs as its own process, so that its CPU is counted
// beside the operator's, with these arguments. It says "ready" once its
// watch has synced, starts on "go", says "created" (or "error: ...") once
// everything it makes is made, stops replacing pods on "drain" (its
// namespace is about to go; it still releases its finalizers) and exits
// when its input closes.
const floorCommand = "floor"

type floorArgs struct {
	kind       sideKind
	ns         string
	jobs       int
	perJob     int
	kubeconfig string
	floorPods  string
	// spec is the file of the defaulted job spec (JSON) an object floor
	// writes into each of its objects.
	spec string
}

func (a floorArgs) argv() []string {
	return []string{floorCommand, "-kind", string(a.kind), "-ns", a.ns, "-jobs", strconv.Itoa(a.jobs),
		"-per-job", strconv.Itoa(a.perJob), "-kubeconfig", a.kubeconfig, "-floor-pods", a.floorPods, "-spec", a.spec}
}

// floorMain is the floor's client process.
func floorMain(argv []string) error {
	var a floorArgs
	var kind string
	fs := flag.NewFlagSet(floorCommand, flag.ContinueOnError)
	fs.StringVar(&kind, "kind", "", "F0, F1, F1s, F1n, F2 or F2-upstream")
	fs.StringVar(&a.ns, "ns", "", "namespace")
	fs.IntVar(&a.jobs, "jobs", 0, "jobs")
	fs.IntVar(&a.perJob, "per-job", 0, "pods per job")
	fs.StringVar(&a.kubeconfig, "kubeconfig", "", "the floor's kubeconfig")
	fs.StringVar(&a.floorPods, "floor-pods", floorPodsSame, "what the pods hold")
	fs.StringVar(&a.spec, "spec", "", "the job spec's file")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	var err error
	if a.kind, err = parseSideKind(kind); err != nil {
		return err
	}
	f, err := newFloor(a)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	if err := f.watch(stop); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	if !in.Scan() || in.Text() != "go" {
		return errors.New("no go")
	}
	if err := f.create(context.Background()); err != nil {
		fmt.Println("error:", strings.ReplaceAll(err.Error(), "\n", " "))
	} else {
		fmt.Println("created")
	}
	for in.Scan() {
		if in.Text() == "drain" {
			f.draining.Store(true)
			fmt.Println("drained")
		}
	}
	return nil
}

// floor is one floor's client: what it makes, and its watch.
type floor struct {
	floorArgs
	cs  kubernetes.Interface
	dyn dynamic.Interface
	// byName are the jobs the pods are made from; an object floor sets
	// each one's UID to its object's when the object is made.
	byName map[string]*musterv1.TrainingJob
	// spec is an object floor's job spec, as Muster's webhook defaults it.
	spec map[string]any
	// status says, per job, whether its "all running" status is written.
	mu      sync.Mutex
	running map[string]map[string]bool
	written map[string]bool
	// released are the pods whose finalizer the floor has released (or is
	// releasing): once each, whatever updates the watch sees meanwhile.
	released map[types.UID]bool
	// attempts are, per task (taskKey), how many of its pods the floor
	// has seen go: F1n names the task's next pod after that count.
	attempts map[string]int
	// draining stops replacements while the namespace goes.
	draining atomic.Bool
}

func newFloor(a floorArgs) (*floor, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", a.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = floorQPS, floorBurst
	cfg.UserAgent = "bench-floor"
	// Built-in kinds in protobuf, as the operator's controller-runtime
	// client sends and watches them; custom resources have only JSON.
	pb := rest.CopyConfig(cfg)
	pb.ContentType = runtime.ContentTypeProtobuf
	pb.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	f := &floor{floorArgs: a, cs: cs, dyn: dyn, byName: make(map[string]*musterv1.TrainingJob, a.jobs),
		running: map[string]map[string]bool{}, written: map[string]bool{}, released: map[types.UID]bool{}, attempts: map[string]int{}}
	for i := range a.jobs {
		f.byName[jobName(i)] = floorJob(a.ns, jobName(i), a.perJob)
	}
	if a.kind.objectFloor() {
		raw, err := os.ReadFile(a.spec)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		f.spec, _ = obj["spec"].(map[string]any)
	}
	return f, nil
}

// pod is the floor's pod of one task of job; for F1n, attempt numbers
// its name after the first, the hostname kept.
func (f *floor) pod(job *musterv1.TrainingJob, index, attempt int) *corev1.Pod {
	p := floorPod(f.floorPods, job, index)
	if f.kind.namesAttempts() {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[floorTaskIndexLabel] = strconv.Itoa(index)
	}
	if attempt > 0 {
		p.Name = fmt.Sprintf("%s-a%d", p.Name, attempt)
	}
	if f.kind.objectFloor() {
		p.OwnerReferences = []metav1.OwnerReference{f.ownerRef(job)}
		p.Finalizers = []string{floorFinalizer}
	}
	return p
}

func (f *floor) ownerRef(job *musterv1.TrainingJob) metav1.OwnerReference {
	r := f.kind.resource()
	return metav1.OwnerReference{APIVersion: r.GroupVersion().String(), Kind: f.kind.objectKind(), Name: job.Name,
		UID: job.UID, Controller: new(true), BlockOwnerDeletion: new(true)}
}

// create makes every job's objects with floorCreators workers, in the
// order an operator would: an object floor's object first, then its
// Service and pods (which need its UID), then its first status write once
// its pods are made.
func (f *floor) create(ctx context.Context) error {
	per := f.perJob + 1
	queue := make(chan func() error, f.jobs*(per+1))
	var pending sync.WaitGroup
	var failed atomic.Pointer[error]
	enqueue := func(item func() error) {
		pending.Add(1)
		queue <- item
	}
	for i := range f.jobs {
		job := f.byName[jobName(i)]
		if f.kind.builtIn() {
			enqueue(func() error { return f.createService(ctx, job) })
			enqueue(func() error { return f.createIndexedJob(ctx, job) })
			continue
		}
		made := func() {
			var left atomic.Int32
			left.Store(int32(per))
			done := func() error {
				if left.Add(-1) == 0 && f.kind.objectFloor() {
					return f.writeStatus(ctx, job.Name, "Created", 0)
				}
				return nil
			}
			enqueue(func() error {
				if err := f.createService(ctx, job); err != nil {
					return err
				}
				return done()
			})
			for k := range f.perJob {
				enqueue(func() error {
					if _, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, f.pod(job, k, 0), metav1.CreateOptions{}); err != nil {
						return err
					}
					return done()
				})
			}
		}
		if !f.kind.objectFloor() {
			made()
			continue
		}
		enqueue(func() error {
			if err := f.createObject(ctx, job); err != nil {
				return err
			}
			made()
			return nil
		})
	}
	for range floorCreators {
		go func() {
			for item := range queue {
				if err := item(); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
				pending.Done()
			}
		}()
	}
	pending.Wait()
	close(queue)
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

func (f *floor) createService(ctx context.Context, job *musterv1.TrainingJob) error {
	svc := floorService(job.Name)
	if f.kind.objectFloor() {
		svc.OwnerReferences = []metav1.OwnerReference{f.ownerRef(job)}
	}
	_, err := f.cs.CoreV1().Services(f.ns).Create(ctx, svc, metav1.CreateOptions{})
	return err
}

// createObject makes an object floor's object for job and gives job its
// UID, for the pods' owner reference.
func (f *floor) createObject(ctx context.Context, job *musterv1.TrainingJob) error {
	spec := runtime.DeepCopyJSONValue(f.spec).(map[string]any)
	// The template's job label names this job, as Muster's do.
	roles, _ := spec["roles"].([]any)
	if len(roles) == 0 {
		return errors.New("the job spec has no role")
	}
	role, _ := roles[0].(map[string]any)
	if err := unstructured.SetNestedField(role, job.Name, "template", "metadata", "labels", jobLabel); err != nil {
		return err
	}
	r := f.kind.resource()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.GroupVersion().String(), "kind": f.kind.objectKind(),
		"metadata": map[string]any{"name": job.Name, "namespace": f.ns},
		"spec":     spec,
	}}
	made, err := f.dyn.Resource(r).Namespace(f.ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	job.UID = made.GetUID()
	return nil
}

// writeStatus is one status write of an object floor's job.
func (f *floor) writeStatus(ctx context.Context, job, phase string, running int) error {
	patch := fmt.Sprintf(`{"status":{"phase":%q,"ready":"%d/%d"}}`, phase, running, f.perJob)
	_, err := f.dyn.Resource(f.kind.resource()).Namespace(f.ns).Patch(ctx, job, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}, "status")
	return err
}

// createIndexedJob makes F2's Job: completions = parallelism = the job's
// pods, one index each, a pod replaced only once it has failed (never two
// pods per index), a failure never ending the job.
func (f *floor) createIndexedJob(ctx context.Context, job *musterv1.TrainingJob) error {
	n := int32(f.perJob)
	spec := fakePodSpec()
	spec.Subdomain = job.Name
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Labels: map[string]string{jobLabel: job.Name}},
		Spec: batchv1.JobSpec{
			Completions: &n, Parallelism: &n, CompletionMode: new(batchv1.IndexedCompletion),
			PodReplacementPolicy: new(batchv1.Failed), BackoffLimit: new(int32(1 << 30)),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{jobLabel: job.Name,
				// KWOK would finish a Job's pods at once; training runs.
				devcluster.KWOKKeepRunningLabel: "true"}}, Spec: spec},
		},
	}
	_, err := f.cs.BatchV1().Jobs(f.ns).Create(ctx, j, metav1.CreateOptions{})
	return err
}

// watch starts the floor's pod watch: F0 and the object floors make a
// deleted pod again under its name; the object floors also release their
// finalizer and write status, side by side, when a pod is being deleted,
// and write status once every pod of a job first runs. F2's are the Job
// controller's.
func (f *floor) watch(stop <-chan struct{}) error {
	if f.kind.builtIn() {
		return nil
	}
	fac := informers.NewSharedInformerFactoryWithOptions(f.cs, 0, informers.WithNamespace(f.ns))
	inf := fac.Core().V1().Pods().Informer()
	ctx := context.Background()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.seen(ctx, obj) },
		UpdateFunc: func(_, cur any) { f.seen(ctx, cur) },
		DeleteFunc: func(obj any) {
			pod := deletedPod(obj)
			if pod == nil || f.draining.Load() || f.kind.namesAttempts() {
				return
			}
			go func() {
				_, _ = f.cs.CoreV1().Pods(f.ns).Create(ctx, f.pod(f.byName[pod.Labels[jobLabel]], podIndex(pod.Name), 0), metav1.CreateOptions{})
			}()
		},
	})
	if err != nil {
		return err
	}
	fac.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		return errors.New("the floor's pod watch did not sync")
	}
	return nil
}

// seen handles an object floor's pod: its release when it is being
// deleted, its job's status when all its pods first run.
func (f *floor) seen(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !f.kind.objectFloor() {
		return
	}
	job := pod.Labels[jobLabel]
	if pod.DeletionTimestamp != nil {
		if len(pod.Finalizers) == 0 {
			return
		}
		task := taskOf(pod)
		f.mu.Lock()
		again := f.released[pod.UID]
		f.released[pod.UID] = true
		delete(f.running[job], pod.Name)
		left := len(f.running[job])
		if !again {
			f.attempts[task]++
		}
		attempt := f.attempts[task]
		f.mu.Unlock()
		if again {
			return
		}
		go f.release(ctx, pod)
		if !f.draining.Load() {
			go func() { _ = f.writeStatus(ctx, job, "Running", left) }()
			if f.kind.namesAttempts() {
				index, _ := strconv.Atoi(pod.Labels[floorTaskIndexLabel])
				go func() {
					_, _ = f.cs.CoreV1().Pods(f.ns).Create(ctx, f.pod(f.byName[job], index, attempt), metav1.CreateOptions{})
				}()
			}
		}
		return
	}
	if pod.Status.Phase != corev1.PodRunning {
		return
	}
	f.mu.Lock()
	if f.running[job] == nil {
		f.running[job] = map[string]bool{}
	}
	f.running[job][pod.Name] = true
	first := len(f.running[job]) == f.perJob && !f.written[job]
	if first {
		f.written[job] = true
	}
	f.mu.Unlock()
	if first {
		go func() { _ = f.writeStatus(ctx, job, "Running", f.perJob) }()
	}
}

// release removes the floor's finalizer from a pod being deleted, guarded
// by its UID so that it never touches the replacement of the same name.
func (f *floor) release(ctx context.Context, pod *corev1.Pod) {
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"remove","path":"/metadata/finalizers"}]`, pod.UID)
	_, _ = f.cs.CoreV1().Pods(f.ns).Patch(ctx, pod.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
}
