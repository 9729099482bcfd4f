// Package invariants checks, from a stream of pod and job observations,
// the two promises the chaos tier holds the operator to whatever crashes
// under it:
//   - a task never has two instances whose containers may run at once: a
//     pod counts from its creation until it has ended (Succeeded or
//     Failed) or is gone, deleting or not, because a graceful deletion
//     leaves its containers running until they stop;
//   - no pod of a job is created after the job finished.
//
// It is pure: the chaos tier feeds it from informers of its own, and its
// unit tests feed it by hand, which shows each check can fire.
package invariants

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Checker records every breach of the invariants as it is observed. It is
// safe for concurrent use.
type Checker struct {
	mu sync.Mutex
	// live maps a task to the pods of it that may run, UID to name.
	live map[string]map[string]string
	// finished is each finished job's resourceVersion when first seen
	// finished, and its completion time.
	finished   map[string]finish
	violations []string
	// created counts the pods each job ever had, by UID.
	created map[string]map[string]bool
	// history is every change seen to each job's pods, for the report of
	// a failure.
	history map[string][]string
}

type finish struct {
	resourceVersion uint64
	at              time.Time
}

// New returns a Checker that has seen nothing.
func New() *Checker {
	return &Checker{
		live:     map[string]map[string]string{},
		finished: map[string]finish{},
		created:  map[string]map[string]bool{},
		history:  map[string][]string{},
	}
}

// TaskKey names the task a pod runs: the operator's labels, not the pod's
// name, so that the check holds whatever the naming.
func TaskKey(pod *corev1.Pod) (string, bool) {
	job := pod.Labels[musterv1.LabelJobName]
	if job == "" {
		return "", false
	}
	if c := pod.Labels[musterv1.LabelComponent]; c != "" {
		return job + "/" + c, true
	}
	return fmt.Sprintf("%s/%s/%s", job, pod.Labels[musterv1.LabelRole], pod.Labels[musterv1.LabelTaskIndex]), true
}

// Job observes a job; the first observation of it finished marks the
// point after which none of its pods may be created.
func (c *Checker) Job(job *musterv1.TrainingJob) {
	if job.Status.CompletionTime == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.finished[job.Name]; !seen {
		c.finished[job.Name] = finish{resourceVersion: revision(job.ResourceVersion), at: job.Status.CompletionTime.Time}
	}
}

// Added observes a pod seen for the first time.
//
// A pod was created after its job finished if its creation comes later
// in the store's order than the write that finished the job. A pod's
// resourceVersion is that of its last change, so it is its creation's only
// while nothing has touched the pod since: not bound, no condition set
// (the scheduler sets one on a pod it cannot place). A pod first seen
// later than that (a watch that was cut and listed again) is compared by
// creation time, in whole seconds, which can only miss a breach.
func (c *Checker) Added(pod *corev1.Pod) {
	c.mu.Lock()
	job := pod.Labels[musterv1.LabelJobName]
	if c.created[job] == nil {
		c.created[job] = map[string]bool{}
	}
	c.created[job][string(pod.UID)] = true
	if f, done := c.finished[job]; done {
		untouched := pod.Spec.NodeName == "" && len(pod.Status.Conditions) == 0
		if (untouched && f.resourceVersion > 0 && revision(pod.ResourceVersion) > f.resourceVersion) || pod.CreationTimestamp.After(f.at) {
			c.violations = append(c.violations, fmt.Sprintf("pod %s (resourceVersion %s, created %s) was created after job %s finished (resourceVersion %d, at %s)",
				pod.Name, pod.ResourceVersion, pod.CreationTimestamp.UTC().Format(time.RFC3339), job, f.resourceVersion, f.at.UTC().Format(time.RFC3339)))
		}
	}
	c.mu.Unlock()
	c.Pod(pod)
}

// Pod observes a change to a pod.
func (c *Checker) Pod(pod *corev1.Pod) {
	key, ok := TaskKey(pod)
	if !ok {
		return
	}
	ended := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(pod, fmt.Sprintf("phase %s, deleting %t", pod.Status.Phase, pod.DeletionTimestamp != nil))
	pods := c.live[key]
	if ended {
		delete(pods, string(pod.UID))
		return
	}
	if pods == nil {
		pods = map[string]string{}
		c.live[key] = pods
	}
	pods[string(pod.UID)] = pod.Name
	if len(pods) > 1 {
		c.violations = append(c.violations, fmt.Sprintf("task %s has %d pods that may run at once: %v", key, len(pods), pods))
	}
}

// Gone observes a pod's removal.
func (c *Checker) Gone(pod *corev1.Pod) {
	if key, ok := TaskKey(pod); ok {
		c.mu.Lock()
		c.record(pod, "gone")
		delete(c.live[key], string(pod.UID))
		c.mu.Unlock()
	}
}

// record notes a change to a pod; c.mu is held.
func (c *Checker) record(pod *corev1.Pod, what string) {
	job := pod.Labels[musterv1.LabelJobName]
	c.history[job] = append(c.history[job], fmt.Sprintf("%s %s uid %.8s attempt %s/%s: %s",
		time.Now().Format("15:04:05.000"), pod.Name, pod.UID, pod.Labels[musterv1.LabelJobAttempt], pod.Labels[musterv1.LabelTaskAttempt], what))
}

// History is every change seen to job's pods, one per line.
func (c *Checker) History(job string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.history[job], "\n")
}

// PodsCreated is how many pods job has had.
func (c *Checker) PodsCreated(job string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.created[job])
}

// Violations are the breaches seen so far.
func (c *Checker) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// revision reads a resourceVersion as the revision of the cluster's one
// etcd, which is what it is on the test's cluster: the API does not
// promise an order, so this is for tests only. An unreadable one is 0,
// which orders before everything.
func revision(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}
