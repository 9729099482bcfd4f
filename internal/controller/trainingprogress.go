package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/trainingprogress"
)

// ProgressReader reads a job's training progress from its running pods
// (spec.progress): what it read, and whether it had a pod to ask. A read
// with none to ask does not count as the interval's: the job's pods
// starting bring it back at once.
type ProgressReader interface {
	Read(ctx context.Context, job *musterv1.TrainingJob, pods []*corev1.Pod) (read *plan.ProgressRead, asked bool)
}

// progressPath is where a pod serves its report.
const progressPath = "/progress"

// httpProgressReader reads a report with GET http://<pod IP>:<port>/progress.
// The operator reads from the pods it made, by their addresses in its
// cache: the pods need no credentials, no address of the operator and no
// access to the API server, and a report is the job's own by where it
// comes from.
type httpProgressReader struct {
	http *http.Client
	// deadline bounds a whole read; zero is sampleDeadline.
	deadline time.Duration
}

// Read asks the pod that served the last report first: it usually serves
// the next. Otherwise, or if it does not answer with one, it asks every
// running task pod, sampleReads at a time within the deadline, and takes
// the first by name that answers with a report: the pods of a rank-0 task
// move when an elastic world re-forms.
func (r *httpProgressReader) Read(ctx context.Context, job *musterv1.TrainingJob, pods []*corev1.Pod) (*plan.ProgressRead, bool) {
	port := job.Spec.Progress.ServePort()
	candidates := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && pod.Status.PodIP != "" && pod.Labels[musterv1.LabelRole] != "" {
			candidates = append(candidates, pod)
		}
	}
	if len(candidates) == 0 {
		return nil, false
	}
	slices.SortFunc(candidates, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if p := job.Status.Progress; p != nil && p.Reporter != "" {
		if i := slices.IndexFunc(candidates, func(pod *corev1.Pod) bool { return pod.Name == p.Reporter }); i >= 0 {
			if read := r.readOne(ctx, candidates[i], port); read.Report != nil {
				return &read, true
			}
			candidates = slices.Delete(candidates, i, i+1)
		}
	}
	reads := make([]plan.ProgressRead, len(candidates))
	eachWithin(ctx, r.deadline, len(candidates), func(ctx context.Context, i int) { reads[i] = r.readOne(ctx, candidates[i], port) })
	var unreadable string
	for _, read := range reads {
		if read.Report != nil {
			return &read, true
		}
		if unreadable == "" {
			unreadable = read.Unreadable
		}
	}
	if unreadable != "" {
		return &plan.ProgressRead{Unreadable: unreadable}, true
	}
	return nil, true
}

// readOne reads one pod's report. A pod that does not answer, or answers
// that it has none (404), has none; an answer that is no report is
// Unreadable, with why.
func (r *httpProgressReader) readOne(ctx context.Context, pod *corev1.Pod, port int32) plan.ProgressRead {
	answer, ok := getFromPod(ctx, r.http, pod, port, progressPath)
	if !ok {
		return plan.ProgressRead{}
	}
	defer func() { _ = answer.Close() }()
	body, err := io.ReadAll(io.LimitReader(answer, trainingprogress.MaxReportBytes+1))
	if err != nil {
		return plan.ProgressRead{}
	}
	report, err := trainingprogress.Parse(body)
	if err != nil {
		return plan.ProgressRead{Unreadable: fmt.Sprintf("pod %s serves no progress report at :%d%s: %v", pod.Name, port, progressPath, err)}
	}
	return plan.ProgressRead{Report: &report, Reporter: pod.Name}
}

// progressReads runs each job's progress reads outside Reconcile, once
// per spec.progress.intervalSeconds, and hands the reconcile that follows
// what was read. A read asks pods over the network, within sampleDeadline:
// a pod that does not answer (behind a default-deny NetworkPolicy, a hung
// program) would hold its job's reconcile for as long, and with every
// worker held, every job's. The read runs in its own goroutine, one at a
// time per job; a read that found a report wakes the job (wake), and the
// next reconcile takes it into its plan. It is the operator's own memory:
// one that starts reads every job once at once.
type progressReads struct {
	reader ProgressReader
	// wake brings a job back to Reconcile; a full channel drops the wake,
	// and the read waits for the job's next reconcile, at the latest its
	// next interval.
	wake chan<- event.GenericEvent

	mu   sync.Mutex
	jobs map[types.NamespacedName]*progressReadState
}

// progressReadState is one job's reads; the UID tells a job made again
// under the same name from its predecessor.
type progressReadState struct {
	uid types.UID
	// at is when the last read began; zero: none yet, or the last had no
	// pod to ask, so the job's pods starting bring the next at once.
	at      time.Time
	running bool
	// read is a finished read that no reconcile has taken yet.
	read *plan.ProgressRead
}

func newProgressReads(reader ProgressReader, wake chan<- event.GenericEvent) *progressReads {
	return &progressReads{reader: reader, wake: wake, jobs: map[types.NamespacedName]*progressReadState{}}
}

// next is the read that finished for job since its last reconcile, if
// any, and starts the next read of its pods when one is due and none
// runs. wait is when the next read is due.
func (p *progressReads) next(ctx context.Context, job *musterv1.TrainingJob, pods []*corev1.Pod, now time.Time) (read *plan.ProgressRead, wait time.Duration) {
	key := client.ObjectKeyFromObject(job)
	interval := job.Spec.Progress.ReadInterval()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.jobs[key]
	if s == nil || s.uid != job.UID {
		s = &progressReadState{uid: job.UID}
		p.jobs[key] = s
	}
	read, s.read = s.read, nil
	if s.running {
		return read, interval
	}
	due, wait := trainingprogress.Due(s.at, interval, now)
	if !due {
		return read, wait
	}
	s.running, s.at = true, now
	// The plan reads the job and the pods as this read does; each gets
	// its own job, and pods are never changed (the cache's own).
	go p.read(ctx, key, s, job.DeepCopy(), slices.Clone(pods))
	return read, interval
}

// read reads one job's progress and keeps it for the job's next
// reconcile, unless the job has gone or been made again meanwhile.
func (p *progressReads) read(ctx context.Context, key types.NamespacedName, s *progressReadState, job *musterv1.TrainingJob, pods []*corev1.Pod) {
	got, asked := p.reader.Read(ctx, job, pods)
	p.mu.Lock()
	s.running = false
	current := p.jobs[key] == s
	switch {
	case !asked:
		s.at = time.Time{}
	case got != nil && current:
		s.read = got
	}
	p.mu.Unlock()
	if got == nil || !current || p.wake == nil {
		return
	}
	select {
	case p.wake <- event.GenericEvent{Object: &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
	default:
	}
}

func (p *progressReads) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.jobs, key)
}

// readProgress is the job's training progress read since its last
// reconcile, when it asks for it and runs, and starts the next read when
// one is due. wait is when the next read is due (zero: none).
func (r *Reconciler) readProgress(ctx context.Context, job *musterv1.TrainingJob, pods []*corev1.Pod, now time.Time) (read *plan.ProgressRead, wait time.Duration) {
	if ex := job.Spec.Run.Execution; !job.Spec.Progress.Enabled() || r.opts.Progress == nil || (ex != "" && ex != musterv1.ExecutionStart) ||
		job.Status.IsTrue(musterv1.ConditionSucceeded) || job.Status.IsTrue(musterv1.ConditionFailed) {
		return nil, 0
	}
	return r.progressReads.next(ctx, job, pods, now)
}
