// Package joblogs streams the logs of every pod of a TrainingJob as one
// interleaved stream, picking up pods that appear later: replacements after a
// restart and new tasks after a scale-up. New pods are found through a watch
// on the job's pods, not by listing them over and over.
package joblogs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/text"
)

// DefaultMaxStreams bounds the log streams open at once when Options does
// not: each is one long request to a kubelet through the API server.
const DefaultMaxStreams = 32

// Line is one log line of one pod instance.
type Line struct {
	// Pod is the pod's name, <job>-<role>-<index>.
	Pod string
	UID types.UID
	// Role and Index are the task's; Role is empty for a pod that is not a
	// task (the rendezvous store).
	Role  string
	Index int
	// TaskAttempt is the pod's instance of its task, 1 for the first.
	TaskAttempt int
	// Time is when the container wrote the line, from the API server's
	// timestamps; zero when it gave none.
	Time time.Time
	Text string
	// Removed marks a line written after a scale-down began removing the
	// pod: its shutdown output (a SIGTERM traceback, as a rule), which
	// callers may keep aside rather than show with the training's.
	Removed bool
}

// Prefix names the line's task as role-index, with #attempt after a
// restart, or the pod's name when it is not a task.
func (l Line) Prefix() string {
	if l.Role == "" {
		return l.Pod
	}
	p := l.Role + "-" + strconv.Itoa(l.Index)
	if l.TaskAttempt > 1 {
		p += "#" + strconv.Itoa(l.TaskAttempt)
	}
	return p
}

// Options tune Follow.
type Options struct {
	// Container to read; empty reads the pod's only (or first) container.
	Container string
	// Follow keeps streaming until ctx ends, and reads the pods that start
	// later; otherwise Follow returns once every pod that has started has
	// been read, its lines merged in time order.
	Follow bool
	// Role and Index narrow the pods read to a role, and to one task of
	// it.
	Role  string
	Index *int
	// Attempt narrows the pods read to their task's Attempt-th pod (the
	// muster.dev/task-attempt label, the #N of a line's prefix); 0 reads
	// every pod. A task's earlier pods are there only until their
	// replacement is made: the replacement has the same name.
	Attempt int
	// Previous reads each pod's container's previous instance, as kubectl
	// logs --previous does: the one before a restart in place (the kubelet's
	// or a node's, not the operator's replacement, which is a new pod).
	// Pods whose container has not restarted are skipped. Not with Follow:
	// an ended instance writes no more.
	Previous bool
	// Since and TailLines narrow the lines of the pods there at the start;
	// pods that appear later are read from their first line.
	Since     time.Duration
	TailLines *int64
	// MaxStreams bounds the log streams open at once; a pod beyond it is
	// read when another stream ends. DefaultMaxStreams when 0.
	MaxStreams int
	// Done, when closed, ends following: no pod is picked up after it, the
	// open streams are read to their end, and those still open after
	// Drain are cut. Callers close it when the job has ended.
	Done <-chan struct{}
	// Drain bounds the wait for open streams after Done; DefaultDrain when
	// 0.
	Drain time.Duration
	// Removed says whether a scale-down removed a role's task: the lines
	// its pod writes once its deletion began are marked Removed. Nil marks
	// none.
	Removed func(role string, index int) bool
}

// DefaultDrain is how long streams may run on after Done: the default
// termination grace period, in which the operator's deletions of a finished
// job's pods end their containers.
const DefaultDrain = 30 * time.Second

// Follow sends every line of every pod instance of the job to emit. Each
// run of a pod instance's container (its UID and the container's restart
// count) is read once: a pod that restarts in place is read again from
// its new run's first line. emit is never called concurrently.
func Follow(ctx context.Context, cs kubernetes.Interface, namespace, job string, opts Options, emit func(Line)) error {
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	// An ended instance writes no more: there is nothing to follow.
	opts.Follow = opts.Follow && !opts.Previous
	f := &follower{cs: cs, ns: namespace, opts: opts, seen: map[run]bool{}, deleting: map[types.UID]time.Time{},
		slots: make(chan struct{}, opts.MaxStreams)}
	sel := labels.Set{musterv1.LabelJobName: job}
	if opts.Role != "" {
		sel[musterv1.LabelRole] = opts.Role
	}
	if opts.Index != nil {
		sel[musterv1.LabelTaskIndex] = strconv.Itoa(*opts.Index)
	}
	if opts.Attempt > 0 {
		sel[musterv1.LabelTaskAttempt] = strconv.Itoa(opts.Attempt)
	}
	f.selector = sel.String()

	if !opts.Follow {
		return f.readAll(ctx, emit)
	}
	var mu sync.Mutex
	f.emit = func(l Line) {
		mu.Lock()
		defer mu.Unlock()
		emit(l)
	}
	streams, cut := context.WithCancel(ctx)
	defer cut()
	f.streams = streams
	err := f.watch(ctx)
	f.drainStreams(ctx, cut)
	return err
}

// drainStreams waits for the open streams: to their end when following
// ended with the job, at most Drain.
func (f *follower) drainStreams(ctx context.Context, cut context.CancelFunc) {
	ended := make(chan struct{})
	go func() { f.wg.Wait(); close(ended) }()
	timer := time.NewTimer(f.opts.Drain)
	defer timer.Stop()
	select {
	case <-ended:
		return
	case <-ctx.Done():
	case <-timer.C:
	}
	cut()
	<-ended
}

type follower struct {
	cs       kubernetes.Interface
	ns       string
	selector string
	opts     Options
	emit     func(Line)

	// streams is the context of the log streams: cut after Done and Drain.
	streams context.Context

	mu    sync.Mutex
	seen  map[run]bool
	slots chan struct{}
	wg    sync.WaitGroup
	// deleting is when each pod instance's deletion began.
	deleting map[types.UID]time.Time
}

// readAll reads every started pod's logs to the end and emits them merged
// by time, so that the lines of all tasks read as one story.
func (f *follower) readAll(ctx context.Context, emit func(Line)) error {
	pods, err := f.cs.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: f.selector})
	if err != nil {
		return err
	}
	items := slices.Clone(pods.Items)
	slices.SortFunc(items, func(a, b corev1.Pod) int { return strings.Compare(podOrder(&a), podOrder(&b)) })
	perPod := make([][]Line, len(items))
	var wg sync.WaitGroup
	for i := range items {
		if !f.readable(&items[i]) {
			continue
		}
		f.noteDeletion(&items[i])
		wg.Add(1)
		f.slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-f.slots }()
			_ = f.stream(ctx, &items[i], true, func(l Line) { perPod[i] = append(perPod[i], l) })
		}()
	}
	wg.Wait()
	var all []Line
	for _, ls := range perPod {
		all = append(all, ls...)
	}
	// Stable: lines of one instant keep their pod's order and their own.
	slices.SortStableFunc(all, func(a, b Line) int { return a.Time.Compare(b.Time) })
	for _, l := range all {
		emit(l)
	}
	return ctx.Err()
}

// watch lists the job's pods, then watches them from that list's version;
// when the watch ends (the API server closes watches after a while) it
// lists again, so no pod is missed and none is read twice.
func (f *follower) watch(ctx context.Context) error {
	first := true
	for ctx.Err() == nil && !f.done() {
		pods, err := f.cs.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: f.selector})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for i := range pods.Items {
			f.noteDeletion(&pods.Items[i])
			f.start(&pods.Items[i], first)
		}
		first = false
		w, err := f.cs.CoreV1().Pods(f.ns).Watch(ctx, metav1.ListOptions{
			LabelSelector: f.selector, ResourceVersion: pods.ResourceVersion, AllowWatchBookmarks: true,
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		f.drain(ctx, w)
	}
	return nil
}

func (f *follower) drain(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.opts.Done:
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				f.noteDeletion(pod)
				f.start(pod, false)
			}
		}
	}
}

// done is whether Done has been closed.
func (f *follower) done() bool {
	select {
	case <-f.opts.Done:
		return true
	default:
		return false
	}
}

// noteDeletion records when a pod's deletion began: its deletion timestamp
// less its grace period.
func (f *follower) noteDeletion(pod *corev1.Pod) {
	if pod.DeletionTimestamp == nil {
		return
	}
	began := pod.DeletionTimestamp.Add(-time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.deleting[pod.UID]; !ok {
		f.deleting[pod.UID] = began
	}
}

// removed is whether a line of a pod was written after a scale-down began
// removing it.
func (f *follower) removed(l Line) bool {
	if f.opts.Removed == nil || l.Role == "" {
		return false
	}
	f.mu.Lock()
	began, ok := f.deleting[l.UID]
	f.mu.Unlock()
	return ok && !l.Time.Before(began) && f.opts.Removed(l.Role, l.Index)
}

// run is one run of the container read in a pod instance: the kubelet
// restarts a container in the same pod (on its own, or all of the pod's at
// once for an in-place restart), and the logs of the pod are then the new
// run's.
type run struct {
	uid      types.UID
	restarts int32
}

// runOf is the run of the container read in pod, and whether it has
// started, so that it has logs.
func (f *follower) runOf(pod *corev1.Pod) (run, bool) {
	cs := containerStatus(pod, f.opts.Container)
	if cs == nil || (cs.State.Running == nil && cs.State.Terminated == nil) {
		return run{}, false
	}
	return run{pod.UID, cs.RestartCount}, true
}

// containerStatus is the status of the container read (the first when
// none is named), nil before the node reports it.
func containerStatus(pod *corev1.Pod, container string) *corev1.ContainerStatus {
	if container == "" && len(pod.Spec.Containers) > 0 {
		container = pod.Spec.Containers[0].Name
	}
	if container == "" && len(pod.Status.ContainerStatuses) > 0 {
		// A pod seen without its spec: its first container reported.
		return &pod.Status.ContainerStatuses[0]
	}
	// A native sidecar is an init container.
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				return &list[i]
			}
		}
	}
	return nil
}

// start reads a run of a pod's container that has started and was not
// read yet. initial says whether it was there when following began, so
// that --since and --tail apply to it.
func (f *follower) start(pod *corev1.Pod, initial bool) {
	r, started := f.runOf(pod)
	if !started {
		return
	}
	f.mu.Lock()
	fresh := !f.seen[r]
	f.seen[r] = true
	f.mu.Unlock()
	if !fresh {
		return
	}
	pod = pod.DeepCopy()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		select {
		case f.slots <- struct{}{}:
		case <-f.streams.Done():
			return
		}
		defer func() { <-f.slots }()
		_ = f.stream(f.streams, pod, initial, f.emit)
	}()
}

// readable is whether the pod has the logs asked for: a container that
// has started or, with Previous, one that has restarted.
func (f *follower) readable(pod *corev1.Pod) bool {
	if f.opts.Previous {
		cs := containerStatus(pod, f.opts.Container)
		return cs != nil && (cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil)
	}
	_, started := f.runOf(pod)
	return started
}

func (f *follower) stream(ctx context.Context, pod *corev1.Pod, initial bool, emit func(Line)) error {
	lo := &corev1.PodLogOptions{Container: f.opts.Container, Follow: f.opts.Follow, Previous: f.opts.Previous, Timestamps: true}
	if initial {
		lo.TailLines = f.opts.TailLines
		if f.opts.Since > 0 {
			lo.SinceSeconds = new(int64(f.opts.Since.Seconds()))
		}
	}
	rc, err := f.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, lo).Stream(ctx)
	if err != nil {
		return fmt.Errorf("pod %s: %w", pod.Name, err) // the pod went away before its logs could be read
	}
	defer func() { _ = rc.Close() }()
	base := Line{Pod: pod.Name, UID: pod.UID, Role: pod.Labels[musterv1.LabelRole]}
	base.Index, _ = strconv.Atoi(pod.Labels[musterv1.LabelTaskIndex])
	base.TaskAttempt, _ = strconv.Atoi(pod.Labels[musterv1.LabelTaskAttempt])
	return eachLine(rc, func(text string) {
		l := base
		l.Time, l.Text = splitTimestamp(text)
		l.Removed = f.removed(l)
		emit(l)
	})
}

// maxLineBytes bounds one line of a log. A progress bar that redraws
// itself with \r and never ends its line makes one line of everything it
// prints: such a line is cut, and the stream goes on after it.
const maxLineBytes = 1 << 20

// eachLine calls fn with each line of r, without its line ending; a line
// longer than maxLineBytes is cut to that, between characters, marked.
func eachLine(r io.Reader, fn func(string)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		// One byte past the bound tells a cut line from one that fits.
		line = append(line, frag[:min(len(frag), maxLineBytes+1-len(line))]...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 {
			fn(text.Head(strings.TrimRight(string(line), "\r\n"), maxLineBytes))
		}
		line = line[:0]
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// splitTimestamp takes the RFC 3339 timestamp the API server puts before
// each line when asked for timestamps.
func splitTimestamp(s string) (time.Time, string) {
	ts, rest, ok := strings.Cut(s, " ")
	if !ok {
		ts, rest = s, ""
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, s
	}
	return t, rest
}

// podOrder sorts pods as the job lists its tasks: by role, index and
// instance, numbers compared as numbers.
func podOrder(p *corev1.Pod) string {
	num := func(k string) string {
		n, _ := strconv.Atoi(p.Labels[k])
		return fmt.Sprintf("%06d", n)
	}
	return p.Labels[musterv1.LabelRole] + "/" + num(musterv1.LabelTaskIndex) + "/" + num(musterv1.LabelTaskAttempt) + "/" + p.Name
}
