// Package observe sorts a job's pods into what the planner reasons about:
// the current attempt's tasks, the rendezvous store, and strays. It is pure
// and decides nothing; the planner imports it, never the reverse.
package observe

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Pods are a job's pods as one plan sees them.
type Pods struct {
	// Tasks are the current attempt's task pods, by name.
	Tasks map[string]*corev1.Pod
	// Store is the current attempt's rendezvous store pod, or nil.
	Store *corev1.Pod
	// Strays are pods to remove, in name order: of another attempt, of a
	// role no longer in the spec, of an index beyond the role's tasks, or a
	// store that is not the current one.
	Strays []*corev1.Pod
	held   map[string]bool
}

// Sort sorts pods. taskCount is how many tasks status holds for a role: a
// role's pods up to its last task in status are the tasks' own, even beyond
// replicas, since scale-down tasks are deleted by the rescale logic.
func Sort(job *musterv1.TrainingJob, attempt int32, taskCount func(role string) int, pods []*corev1.Pod) Pods {
	out := Pods{Tasks: make(map[string]*corev1.Pod, len(pods)), held: map[string]bool{}}
	replicas := make(map[string]int32, len(job.Spec.Roles))
	for i := range job.Spec.Roles {
		r := &job.Spec.Roles[i]
		replicas[r.Name] = max(topology.Replicas(r), int32(taskCount(r.Name)))
	}
	current := strconv.Itoa(int(attempt))
	// The plan depends on which pods exist, never on the order they were
	// listed in.
	for _, pod := range slices.SortedFunc(slices.Values(pods), byName) {
		if pod.Labels[musterv1.LabelComponent] == musterv1.ComponentStore {
			if pod.Name == objects.StorePodName(job) && pod.Labels[musterv1.LabelJobAttempt] == current {
				out.Store = pod
			} else {
				out.stray(pod)
			}
			continue
		}
		n, known := replicas[pod.Labels[musterv1.LabelRole]]
		idx, err := strconv.Atoi(pod.Labels[musterv1.LabelTaskIndex])
		if !known || err != nil || int32(idx) >= n || pod.Labels[musterv1.LabelJobAttempt] != current {
			out.stray(pod)
			continue
		}
		out.Tasks[pod.Name] = pod
	}
	return out
}

func (p *Pods) stray(pod *corev1.Pod) {
	p.held[pod.Name] = true
	p.Strays = append(p.Strays, pod)
}

// Held is whether a stray pod still holds name: a task's new pod waits
// until it is gone.
func (p Pods) Held(name string) bool { return p.held[name] }

// Current are the current attempt's task pods in name order, so that a
// plan lists its actions in the same order every time.
func (p Pods) Current() []*corev1.Pod {
	return slices.SortedFunc(func(yield func(*corev1.Pod) bool) {
		for _, pod := range p.Tasks {
			if !yield(pod) {
				return
			}
		}
	}, byName)
}

func byName(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }
