// Package joblogs streams the logs of every pod of a TrainingJob as one
// interleaved stream, picking up pods that appear later: replacements after a
// restart and new tasks after a scale-up.
package joblogs

import (
	"bufio"
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// Line is one log line of one pod instance.
type Line struct {
	Pod  string
	UID  types.UID
	Text string
}

// Options tune Follow.
type Options struct {
	// Container to read; empty reads the pod's only (or first) container.
	Container string
	// Follow keeps streaming until ctx ends; otherwise Follow returns once
	// every pod seen at the start has been read.
	Follow bool
	// Poll is how often the pod list is checked for new pods.
	Poll time.Duration
}

// Follow sends every line of every pod instance of the job to emit, in the
// order each pod produced them. Each pod instance (UID) is read once.
func Follow(ctx context.Context, cs kubernetes.Interface, namespace, job string, opts Options, emit func(Line)) error {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	var (
		mu   sync.Mutex
		seen = map[types.UID]bool{}
		wg   sync.WaitGroup
	)
	defer wg.Wait()
	selector := metav1.ListOptions{LabelSelector: musterv1.LabelJobName + "=" + job}
	for {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, selector)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if !hasStarted(pod) {
				continue
			}
			mu.Lock()
			fresh := !seen[pod.UID]
			seen[pod.UID] = true
			mu.Unlock()
			if fresh {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stream(ctx, cs, pod, opts, emit)
				}()
			}
		}
		if !opts.Follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(opts.Poll):
		}
	}
}

// hasStarted is whether the pod has logs to read: a container has started.
func hasStarted(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}

func stream(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, opts Options, emit func(Line)) {
	req := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: opts.Container,
		Follow:    opts.Follow,
	})
	rc, err := req.Stream(ctx)
	if err != nil {
		return // the pod went away before its logs could be read
	}
	defer func() { _ = rc.Close() }()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		emit(Line{Pod: pod.Name, UID: pod.UID, Text: sc.Text()})
	}
}
