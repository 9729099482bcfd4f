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
	"k8s.io/apimachinery/pkg/types"

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

// progressReads remembers when each job's progress was last read, so
// that it is read once per spec.progress.intervalSeconds. It is the
// operator's own memory: one that starts reads every job once at once.
type progressReads struct {
	mu   sync.Mutex
	last map[types.NamespacedName]progressReadAt
}

type progressReadAt struct {
	uid types.UID
	at  time.Time
}

func newProgressReads() *progressReads {
	return &progressReads{last: map[types.NamespacedName]progressReadAt{}}
}

// due is whether job's progress should be read at now; if not, how long
// until it should.
func (p *progressReads) due(job *musterv1.TrainingJob, now time.Time) (bool, time.Duration) {
	p.mu.Lock()
	last, ok := p.last[types.NamespacedName{Namespace: job.Namespace, Name: job.Name}]
	p.mu.Unlock()
	var at time.Time
	if ok && last.uid == job.UID {
		at = last.at
	}
	return trainingprogress.Due(at, job.Spec.Progress.ReadInterval(), now)
}

// readAt records a read of job's progress.
func (p *progressReads) readAt(job *musterv1.TrainingJob, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[types.NamespacedName{Namespace: job.Namespace, Name: job.Name}] = progressReadAt{uid: job.UID, at: now}
}

func (p *progressReads) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// readProgress reads the job's training progress when it asks for it, runs,
// and a read is due. wait is when the next read is due (zero: none).
func (r *Reconciler) readProgress(ctx context.Context, job *musterv1.TrainingJob, pods []*corev1.Pod, now time.Time) (read *plan.ProgressRead, wait time.Duration) {
	if ex := job.Spec.Run.Execution; !job.Spec.Progress.Enabled() || r.opts.Progress == nil || (ex != "" && ex != musterv1.ExecutionStart) ||
		job.Status.IsTrue(musterv1.ConditionSucceeded) || job.Status.IsTrue(musterv1.ConditionFailed) {
		return nil, 0
	}
	interval := job.Spec.Progress.ReadInterval()
	if due, wait := r.progressReads.due(job, now); !due {
		return nil, wait
	}
	read, asked := r.opts.Progress.Read(ctx, job, pods)
	if !asked {
		return nil, 0
	}
	r.progressReads.readAt(job, now)
	return read, interval
}
