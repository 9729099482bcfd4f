package observe

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// Sort keeps the current attempt's pods of known tasks, and lists every
// other pod as a stray, in name order, whatever order they were listed in.
func TestSort(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("w", 2).Elastic(1, 3).Obj()
	mk := func(role string, index int32, edit func(*corev1.Pod)) *corev1.Pod {
		p := testutil.MakePod(job, role, index).Obj()
		if edit != nil {
			edit(p)
		}
		return p
	}
	storePod := func(name, attempt string) *corev1.Pod {
		p := mk("w", 0, nil)
		p.Name = name
		p.Labels = map[string]string{musterv1.LabelComponent: musterv1.ComponentStore, musterv1.LabelJobAttempt: attempt}
		return p
	}
	pods := []*corev1.Pod{
		mk("w", 3, nil), // a task status still holds: a scale-down's
		mk("w", 1, nil),
		mk("w", 0, func(p *corev1.Pod) { p.Labels[musterv1.LabelJobAttempt] = "1" }), // an old attempt's
		mk("gone", 0, nil),           // a removed role's
		mk("w", 4, nil),              // beyond every task
		storePod("j-store", "0"),     // the current store
		storePod("j-store-old", "0"), // not the store's name
		mk("w", 2, func(p *corev1.Pod) { delete(p.Labels, musterv1.LabelTaskIndex) }),
	}
	tasks := func(role string) int {
		if role == "w" {
			return 4
		}
		return 0
	}
	got := Sort(job, 0, tasks, pods)
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"j-w-1", "j-w-3"}, names(got.Current())); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"j-gone-0", "j-store-old", "j-w-0", "j-w-2", "j-w-4"}, names(got.Strays)); diff != "" {
		t.Errorf("strays (-want +got):\n%s", diff)
	}
	if got.Store == nil || got.Store.Name != "j-store" {
		t.Errorf("store: %v", got.Store)
	}
	if !got.Held("j-w-0") || got.Held("j-w-1") {
		t.Error("a stray holds its name, a task's pod does not")
	}
}

func TestWaiting(t *testing.T) {
	waiting := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name       string
		init, main []corev1.ContainerStatus
		want       string
	}{
		{"nothing reported yet", nil, nil, ""},
		{"waiting its turn", []corev1.ContainerStatus{waiting("watcher", "ContainerCreating")}, []corev1.ContainerStatus{waiting("main", "PodInitializing")}, ""},
		{"an init container's image", []corev1.ContainerStatus{waiting("watcher", "ImagePullBackOff")}, []corev1.ContainerStatus{waiting("main", "PodInitializing")}, "watcher: ImagePullBackOff"},
		{"a pull being retried reads the same", []corev1.ContainerStatus{waiting("watcher", "ErrImagePull")}, nil, "watcher: ImagePullBackOff"},
		{"a training container's missing Secret", nil, []corev1.ContainerStatus{waiting("main", "CreateContainerConfigError")}, "main: CreateContainerConfigError"},
		{"bounded", nil, []corev1.ContainerStatus{waiting("main", long)}, ("main: " + long)[:maxWaiting]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: tc.init, ContainerStatuses: tc.main}}
			if got := Waiting(pod); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
