package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
)

func TestShouldRestart(t *testing.T) {
	cases := []struct {
		policy corev1.RestartPolicy
		code   int32
		want   bool
	}{
		{corev1.RestartPolicyNever, 1, false},
		{corev1.RestartPolicyOnFailure, 0, false},
		{corev1.RestartPolicyOnFailure, 137, true},
		{corev1.RestartPolicyAlways, 0, true},
		{"", 0, true}, // the API defaults to Always
	}
	for _, c := range cases {
		if got := shouldRestart(c.policy, c.code); got != c.want {
			t.Errorf("shouldRestart(%s, %d) = %v", c.policy, c.code, got)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := &ctr{}
	var got []time.Duration
	for range 8 {
		got = append(got, c.nextBackoff(10*time.Second, time.Second))
	}
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("backoffs = %v", got)
		}
	}
	if d := c.nextBackoff(10*time.Second, 11*time.Minute); d != 0 {
		t.Errorf("a long run must reset the back-off, got %v", d)
	}
}

func TestFinalEnv(t *testing.T) {
	env := finalEnv([]podenv.Var{{Name: "A", Value: "1"}}, "pod-0", false)
	joined := strings.Join(env, "\n")
	for _, want := range []string{"A=1", "PATH=" + defaultPath, "HOME=/root", "HOSTNAME=pod-0"} {
		if !strings.Contains(joined, want) {
			t.Errorf("env lacks %q:\n%s", want, joined)
		}
	}
	env = finalEnv([]podenv.Var{{Name: "PATH", Value: "/usr/bin"}, {Name: "HOME", Value: "/home/x"}}, "p", false)
	if env[0] != "PATH=/usr/bin" || env[1] != "HOME=/home/x" {
		t.Errorf("explicit PATH/HOME: %v", env)
	}
}

func TestResumeAfterNodeRestart(t *testing.T) {
	running := corev1.ContainerStatus{Name: "c", RestartCount: 2,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	done := corev1.ContainerStatus{Name: "c",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}
	prev := map[string]corev1.ContainerStatus{"c": running}

	c := newCtr(corev1.Container{Name: "c"}, false, prev)
	if !c.everStarted || c.restartCount != 2 {
		t.Fatalf("history not carried over: %+v", c)
	}
	if !c.resume(corev1.RestartPolicyAlways, running, true) {
		t.Error("Always: a container that was running must run again")
	}
	c = newCtr(corev1.Container{Name: "c"}, false, prev)
	if c.resume(corev1.RestartPolicyNever, running, true) || c.state.Terminated == nil ||
		c.state.Terminated.Reason != "ContainerStatusUnknown" {
		t.Errorf("Never: the lost process must be reported, got %+v", c.state)
	}
	c = newCtr(corev1.Container{Name: "c"}, false, map[string]corev1.ContainerStatus{"c": done})
	if c.resume(corev1.RestartPolicyOnFailure, done, true) || !c.final {
		t.Error("OnFailure: a completed container must stay completed")
	}
	if !newCtr(corev1.Container{Name: "c"}, false, nil).resume(corev1.RestartPolicyNever, corev1.ContainerStatus{}, false) {
		t.Error("a new container must run")
	}
}

func newTestRun(pod *corev1.Pod) *podRun {
	return newPodRun(New(Config{StateDir: "/state"}), pod)
}

func TestSnapshotPhases(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
		Status: corev1.PodStatus{QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	r := newTestRun(pod)
	if s := r.snapshot(); s.Status.Phase != corev1.PodPending || s.Status.HostIP != HostIP ||
		s.Status.ContainerStatuses[0].State.Waiting == nil || s.Status.QOSClass != corev1.PodQOSBurstable {
		t.Fatalf("new pod: %+v", s.Status)
	}
	r.sandbox.ready, r.initDone, r.podIP = true, true, "10.0.0.2"
	r.mains[0].state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	r.mains[0].ready = true
	if s := r.snapshot(); s.Status.Phase != corev1.PodPending {
		t.Fatalf("one of two started: want Pending as the kubelet reports it, got %s", s.Status.Phase)
	}
	r.mains[1].state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	s := r.snapshot()
	if s.Status.Phase != corev1.PodRunning || s.Status.PodIP != "10.0.0.2" || cond(s, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatalf("one of two ready: %+v", s.Status)
	}
	if cond(s, corev1.PodScheduled) != corev1.ConditionTrue {
		t.Error("the scheduler's condition must be kept")
	}
	r.mains[1].ready = true
	if s := r.snapshot(); cond(s, corev1.PodReady) != corev1.ConditionTrue {
		t.Fatalf("all ready: %+v", s.Status.Conditions)
	}
	// A container waiting to be restarted has run: the pod stays Running.
	r.mains[1].everStarted = true
	r.mains[1].last = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	r.mains[1].state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	if s := r.snapshot(); s.Status.Phase != corev1.PodRunning {
		t.Fatalf("one container restarting: want Running, got %s", s.Status.Phase)
	}
	r.mains[1].last = corev1.ContainerState{}
	// So does one the node resumes after it restarted (the status it had
	// then says it ran).
	resumed := newTestRun(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "a"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}})
	resumed.initDone = true
	if s := resumed.snapshot(); s.Status.Phase != corev1.PodRunning {
		t.Fatalf("a pod resumed after a node restart went back to %s", s.Status.Phase)
	}
	for i, code := range []int32{0, 3} {
		r.mains[i].ready = false
		r.mains[i].state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	r.finalizeStatuses()
	if s := r.snapshot(); s.Status.Phase != corev1.PodFailed || cond(s, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatalf("one failed: %+v", s.Status)
	}
}

func cond(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// A pod made again under the name of one this node still runs (its
// deletion not seen yet) is a new pod: virtual-kubelet finds the old run by
// name and hands the new pod to UpdatePod, which must start it, and stop
// the old one, instead of failing it as unknown.
func TestNewPodUnderARunningPodsNameReplacesIt(t *testing.T) {
	p := New(Config{StateDir: "/state"})
	var started []*podRun
	p.start = func(r *podRun) { started = append(started, r) }
	pod := func(uid types.UID) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", UID: uid},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
	}
	ctx := context.Background()
	if err := p.CreatePod(ctx, pod("old")); err != nil {
		t.Fatal(err)
	}
	if err := p.UpdatePod(ctx, pod("new")); err != nil {
		t.Fatalf("the new pod was refused: %v", err)
	}
	if len(started) != 2 || started[1].uid() != "new" {
		t.Fatalf("want the new pod started after the old, got %d runs", len(started))
	}
	if got := p.lookup("ns", "w-0"); got != started[1] {
		t.Fatal("the name does not answer for the new pod")
	}
	if !started[0].stopping() {
		t.Fatal("the old pod's run was not stopped")
	}
	// The old pod's deletion, arriving late, leaves the new one alone.
	if err := p.DeletePod(ctx, pod("old")); err != nil || started[1].stopping() {
		t.Fatalf("the old pod's deletion stopped the new pod (err %v)", err)
	}
	// The same pod again is not a second run.
	if err := p.CreatePod(ctx, pod("new")); err != nil || len(started) != 2 {
		t.Fatalf("the same pod was started twice (err %v)", err)
	}
}
