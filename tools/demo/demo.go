// Package demo runs the elastic PyTorch example as a scenario: start it with
// 4 workers, scale it to 2, then to 3, and let it finish, showing world
// size, epoch, loss and the job's phase as they happen. `make demo` and the
// e2e test both run it.
package demo

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/printers"
	"github.com/muster-dev/muster/internal/joblogs"
)

// JobName is the name of the example's TrainingJob.
const JobName = "elastic"

// Options say where the example is and how to reach the cluster.
type Options struct {
	Out        io.Writer
	Namespace  string
	Example    string // the example's kustomization folder
	Kubectl    string
	Kubeconfig string
	// Worlds are the sizes to run in turn; the first is the example's own.
	Worlds []int
	// EpochsPerWorld is how many epochs each world trains before the next
	// scale.
	EpochsPerWorld int
	// StepTimeout bounds each stage: coming up, each rescale, finishing.
	StepTimeout time.Duration
}

// Report is what the scenario saw.
type Report struct {
	Progress   Progress
	Phase      musterv1.JobPhase
	Completion string
	// Rescales is, per scale request, the time until the new world
	// finished its first epoch.
	Rescales []time.Duration
	Elapsed  time.Duration
	// Reported is the job's status.progress at its end, as muster get
	// shows it.
	Reported string
}

type run struct {
	opts  Options
	c     client.Client
	start time.Time
	mu    sync.Mutex
	prog  Progress
	phase musterv1.JobPhase
	ready string
	// reported is status.progress as last shown: PROGRESS and ETA.
	reported string
}

// Run runs the scenario against the cluster at cfg.
func Run(ctx context.Context, cfg *rest.Config, opts Options) (*Report, error) {
	if len(opts.Worlds) == 0 {
		opts.Worlds = []int{4, 2, 3}
	}
	if opts.EpochsPerWorld == 0 {
		opts.EpochsPerWorld = 2
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 4 * time.Minute
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := musterv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &run{opts: opts, c: c, start: time.Now()}
	if err := r.apply(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = joblogs.Follow(ctx, cs, opts.Namespace, JobName, joblogs.Options{Follow: true}, r.onLine)
	}()
	report := &Report{}
	for i, world := range opts.Worlds {
		if i > 0 {
			asked := time.Now()
			if err := r.scale(ctx, world); err != nil {
				return report, err
			}
			if err := r.waitFor(ctx, fmt.Sprintf("world %d to train", world), func(p Progress, _ *musterv1.TrainingJob) bool {
				return p.World() == world && p.EpochsInWorld() >= 1
			}); err != nil {
				return report, err
			}
			report.Rescales = append(report.Rescales, time.Since(asked))
		}
		if err := r.waitFor(ctx, fmt.Sprintf("%d epochs at world %d", opts.EpochsPerWorld, world), func(p Progress, _ *musterv1.TrainingJob) bool {
			return p.Finished || (p.World() == world && p.EpochsInWorld() >= opts.EpochsPerWorld)
		}); err != nil {
			return report, err
		}
	}
	err = r.waitForJob(ctx, report)
	report.Progress = r.progress()
	report.Elapsed = time.Since(r.start)
	r.summary(report)
	return report, err
}

func (r *run) printf(format string, args ...any) {
	fmt.Fprintf(r.opts.Out, "[%6.1fs] %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

func (r *run) apply(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.opts.Namespace}}
	if err := r.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	r.printf("applying %s to namespace %s", r.opts.Example, r.opts.Namespace)
	cmd := exec.CommandContext(ctx, r.opts.Kubectl, "--kubeconfig", r.opts.Kubeconfig,
		"apply", "--server-side", "-n", r.opts.Namespace, "-k", r.opts.Example)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl apply: %w: %s", err, out)
	}
	return nil
}

// onLine shows the example's progress lines and folds them into progress.
func (r *run) onLine(l joblogs.Line) {
	e, ok := ParseEvent(l.Text)
	if !ok {
		return
	}
	r.mu.Lock()
	r.prog.Observe(e)
	r.mu.Unlock()
	switch e.Name {
	case "started":
		r.printf("training started: world %d (%s)", e.World, l.Pod)
	case "resumed":
		r.printf("world %d resumed from the checkpoint of epoch %d (%s)", e.World, e.Epoch-1, l.Pod)
	case "epoch":
		r.printf("world %d  epoch %2d  loss %s", e.World, e.Epoch, e.Loss)
	case "finished":
		r.printf("training finished at world %d", e.World)
	}
}

func (r *run) progress() Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.prog
	p.Worlds = append([]int(nil), p.Worlds...)
	p.Resumes = append([]int(nil), p.Resumes...)
	p.EpochsAt = append([]int(nil), p.EpochsAt...)
	return p
}

// scale goes through the job's /scale subresource, as kubectl scale and an
// autoscaler would.
func (r *run) scale(ctx context.Context, world int) error {
	r.printf("scaling the workers %d -> %d (kubectl scale trainingjob/%s --replicas %d)", r.progress().World(), world, JobName, world)
	job := &musterv1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: JobName}}
	scale := &autoscalingv1.Scale{ObjectMeta: job.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: int32(world)}}
	return r.c.SubResource("scale").Update(ctx, job, client.WithSubResourceBody(scale))
}

// waitFor polls until done holds, showing phase changes meanwhile.
func (r *run) waitFor(ctx context.Context, what string, done func(Progress, *musterv1.TrainingJob) bool) error {
	deadline := time.Now().Add(r.opts.StepTimeout)
	for {
		job, err := r.watchPhase(ctx)
		if err != nil {
			return err
		}
		if done(r.progress(), job) {
			return nil
		}
		if job != nil && (job.Status.Phase == musterv1.PhaseFailed || job.Status.Phase == musterv1.PhaseSucceeded) {
			return fmt.Errorf("waiting for %s: the job ended %s: %s", what, job.Status.Phase, completion(job))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: timed out after %s (job phase %s)", what, r.opts.StepTimeout, r.phase)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (r *run) waitForJob(ctx context.Context, report *Report) error {
	err := r.waitFor(ctx, "the job to finish", func(_ Progress, job *musterv1.TrainingJob) bool {
		if job == nil || (job.Status.Phase != musterv1.PhaseSucceeded && job.Status.Phase != musterv1.PhaseFailed) {
			return false
		}
		report.Phase, report.Completion = job.Status.Phase, completion(job)
		report.Reported = printers.Progress(job.Status.Progress)
		return true
	})
	if err == nil && report.Phase != musterv1.PhaseSucceeded {
		err = fmt.Errorf("the job ended %s: %s", report.Phase, report.Completion)
	}
	return err
}

func (r *run) watchPhase(ctx context.Context) (*musterv1.TrainingJob, error) {
	job := &musterv1.TrainingJob{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: JobName}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if job.Status.Phase != r.phase || job.Status.Ready != r.ready {
		r.phase, r.ready = job.Status.Phase, job.Status.Ready
		r.printf("job %s: %s, %s tasks running", JobName, r.phase, r.ready)
	}
	// What the operator read from rank 0 (spec.progress), as muster get
	// shows it.
	if p := job.Status.Progress; p != nil {
		shown := printers.Progress(p) + ", ETA " + printers.ETA(p, time.Now())
		if p.Percent != nil && r.reported != shown {
			r.reported = shown
			r.printf("status.progress: %s (muster get's PROGRESS and ETA)", shown)
		}
	}
	return job, nil
}

func completion(job *musterv1.TrainingJob) string {
	if job.Status.Completion == nil {
		return ""
	}
	return job.Status.Completion.Message
}

func (r *run) summary(rep *Report) {
	worlds := make([]string, len(rep.Progress.Worlds))
	for i, w := range rep.Progress.Worlds {
		worlds[i] = fmt.Sprint(w)
	}
	w := r.opts.Out
	fmt.Fprintln(w, "\nSummary")
	fmt.Fprintf(w, "  world sizes:      %s\n", strings.Join(worlds, " -> "))
	fmt.Fprintf(w, "  resumed at epoch: %v\n", rep.Progress.Resumes)
	for i, d := range rep.Rescales {
		fmt.Fprintf(w, "  rescale %d:        %.1fs from request to the new world's first epoch\n", i+1, d.Seconds())
	}
	fmt.Fprintf(w, "  last epoch:       %d, loss %s\n", rep.Progress.LastEpoch, rep.Progress.LastLoss)
	fmt.Fprintf(w, "  job:              %s: %s\n", rep.Phase, rep.Completion)
	fmt.Fprintf(w, "  status.progress:  %s\n", rep.Reported)
	fmt.Fprintf(w, "  took:             %.0fs\n", rep.Elapsed.Seconds())
}
