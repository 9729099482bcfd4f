package joblogs

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A pod restarted in place keeps its UID: following its logs must read its
// new run, once, and nothing again for a change that starts no run.
func TestFollowReadsEachRunOfAPodRestartedInPlace(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "j-worker-0", Namespace: "ns", UID: "u1",
			Labels: map[string]string{musterv1.LabelJobName: "j", musterv1.LabelTaskAttempt: "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	cs := fake.NewClientset(pod)
	var mu sync.Mutex
	var lines []Line
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(lines) }
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for count() < n {
			if time.Now().After(deadline) {
				t.Fatalf("read %d runs, want %d", count(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	done := make(chan struct{})
	ended := make(chan error)
	go func() {
		ended <- Follow(context.Background(), cs, "ns", "j", Options{Follow: true, Done: done}, func(l Line) {
			mu.Lock()
			lines = append(lines, l)
			mu.Unlock()
		})
	}()
	waitFor(1)

	update := func(change func(*corev1.Pod)) {
		t.Helper()
		change(pod)
		if _, err := cs.CoreV1().Pods("ns").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The same run, shown ready: nothing new to read.
	update(func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Ready = true })
	// Between two runs: the container waits.
	update(func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
		p.Status.ContainerStatuses[0].RestartCount = 1
	})
	// The next run, in the next attempt.
	update(func(p *corev1.Pod) {
		p.Labels[musterv1.LabelTaskAttempt] = "2"
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	})
	waitFor(2)
	close(done)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("read %d runs, want 2: %+v", len(lines), lines)
	}
	if lines[0].TaskAttempt != 1 || lines[1].TaskAttempt != 2 {
		t.Errorf("task attempts %d, %d; want 1, 2", lines[0].TaskAttempt, lines[1].TaskAttempt)
	}
}
