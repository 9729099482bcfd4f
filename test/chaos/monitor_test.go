package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// monitor watches one namespace's pods and jobs through its own informers
// (never the operator's) and records every breach of the invariants as it
// happens:
//   - a task never has two live pods (live: not finished, not deleting);
//   - no pod of a job is created after the job finished.
type monitor struct {
	mu sync.Mutex
	// live maps a task to the UIDs of its live pods.
	live       map[string]map[string]string
	finishedAt map[string]time.Time
	violations []string
	// created counts the pods each job ever had, by UID.
	created map[string]map[string]bool
	// history is every change seen to each job's pods, for the report of
	// a failure.
	history map[string][]string
}

func startMonitor(t *testing.T, namespace string) *monitor {
	t.Helper()
	m := &monitor{live: map[string]map[string]string{}, finishedAt: map[string]time.Time{}, created: map[string]map[string]bool{}, history: map[string][]string{}}
	c, err := cache.New(cluster.REST, cache.Options{Scheme: k8s.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	podInf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	jobInf, err := c.GetInformer(ctx, &musterv1.TrainingJob{})
	if err != nil {
		t.Fatal(err)
	}
	onPod := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			m.pod(pod)
		}
	}
	if _, err := podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.added(obj) },
		UpdateFunc: func(_, obj any) { onPod(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				m.gone(pod)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	onJob := func(obj any) {
		if job, ok := obj.(*musterv1.TrainingJob); ok && job.Status.CompletionTime != nil {
			m.mu.Lock()
			m.finishedAt[job.Name] = job.Status.CompletionTime.Time
			m.mu.Unlock()
		}
	}
	if _, err := jobInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    onJob,
		UpdateFunc: func(_, obj any) { onJob(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("the monitor's caches did not sync")
	}
	return m
}

// taskKey names the task a pod runs: the operator's labels, not the pod's
// name, so that the check holds whatever the naming.
func taskKey(pod *corev1.Pod) (string, bool) {
	job := pod.Labels[musterv1.LabelJobName]
	if job == "" {
		return "", false
	}
	if c := pod.Labels[musterv1.LabelComponent]; c != "" {
		return job + "/" + c, true
	}
	return fmt.Sprintf("%s/%s/%s", job, pod.Labels[musterv1.LabelRole], pod.Labels[musterv1.LabelTaskIndex]), true
}

func (m *monitor) added(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	m.mu.Lock()
	job := pod.Labels[musterv1.LabelJobName]
	if m.created[job] == nil {
		m.created[job] = map[string]bool{}
	}
	m.created[job][string(pod.UID)] = true
	if at, done := m.finishedAt[job]; done && pod.CreationTimestamp.After(at) {
		m.violations = append(m.violations, fmt.Sprintf("pod %s created at %s, after job %s finished at %s",
			pod.Name, pod.CreationTimestamp.UTC().Format(time.RFC3339), job, at.UTC().Format(time.RFC3339)))
	}
	m.mu.Unlock()
	m.pod(pod)
}

func (m *monitor) pod(pod *corev1.Pod) {
	key, ok := taskKey(pod)
	if !ok {
		return
	}
	live := pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record(pod, fmt.Sprintf("phase %s, deleting %t", pod.Status.Phase, pod.DeletionTimestamp != nil))
	pods := m.live[key]
	if !live {
		delete(pods, string(pod.UID))
		return
	}
	if pods == nil {
		pods = map[string]string{}
		m.live[key] = pods
	}
	pods[string(pod.UID)] = pod.Name
	if len(pods) > 1 {
		m.violations = append(m.violations, fmt.Sprintf("task %s has %d live pods: %v", key, len(pods), pods))
	}
}

func (m *monitor) gone(pod *corev1.Pod) {
	if key, ok := taskKey(pod); ok {
		m.mu.Lock()
		m.record(pod, "gone")
		delete(m.live[key], string(pod.UID))
		m.mu.Unlock()
	}
}

// record notes a change to a pod; m.mu is held.
func (m *monitor) record(pod *corev1.Pod, what string) {
	job := pod.Labels[musterv1.LabelJobName]
	m.history[job] = append(m.history[job], fmt.Sprintf("%s %s uid %.8s attempt %s/%s: %s",
		time.Now().Format("15:04:05.000"), pod.Name, pod.UID, pod.Labels[musterv1.LabelJobAttempt], pod.Labels[musterv1.LabelTaskAttempt], what))
}

// historyOf is every change seen to job's pods, one per line.
func (m *monitor) historyOf(job string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.history[job], "\n")
}

// podsCreated is how many pods job has had.
func (m *monitor) podsCreated(job string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.created[job])
}

// check fails the test with every violation seen so far.
func (m *monitor) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.violations {
		t.Error("invariant broken:", v)
	}
}
