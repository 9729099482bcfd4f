package logs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
	"github.com/muster-dev/muster/internal/testutil"
)

// podLogs answers each pod's log request with lines written four seconds
// apart, each pod starting at its own offset, so that merging by time
// interleaves them; it records the options each request carried.
func podLogs(f *clitest.Factory, asked map[string]*corev1.PodLogOptions) {
	offsets := map[string]int{"pet-launcher-0": 0, "pet-worker-0": 1, "pet-worker-1": 2, "pet-worker-2": 3, "pet-worker-3": 4}
	var mu sync.Mutex
	f.Logs = func(_, pod string, opts *corev1.PodLogOptions) string {
		mu.Lock()
		defer mu.Unlock()
		if asked != nil {
			asked[pod] = opts
		}
		var b strings.Builder
		for i := range 2 {
			at := clitest.Now.Add(time.Duration(offsets[pod]+4*i) * time.Second)
			fmt.Fprintf(&b, "%s step %d on %s\n", at.Format(time.RFC3339Nano), i, pod)
		}
		return b.String()
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func objects() []runtime.Object {
	objs := []runtime.Object{clitest.ElasticJob()}
	for _, p := range clitest.ElasticPods() {
		objs = append(objs, p)
	}
	// Not started: no logs to read yet.
	objs = append(objs, testutil.MakePod(clitest.ElasticJob(), "worker", 3).Obj())
	return objs
}

func TestLogs(t *testing.T) {
	cases := map[string][]string{
		"merged":      {"pet"},
		"role":        {"pet", "--role", "worker"},
		"index":       {"pet", "--role", "worker", "--index", "1", "--timestamps"},
		"no-prefix":   {"pet", "--role", "launcher", "--prefix=false"},
		"not-started": {"pet", "--role", "worker", "--index", "3"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, objects()...)
			podLogs(f, nil)
			r := clitest.Run(t, NewCmd, f, args...)
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			clitest.Golden(t, "logs-"+name, r.Out+r.Err)
		})
	}
}

func TestLogsPassesSinceAndTail(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, objects()...)
	asked := map[string]*corev1.PodLogOptions{}
	podLogs(f, asked)
	if r := clitest.Run(t, NewCmd, f, "pet", "--since", "10m", "--tail", "5", "-c", "main"); r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(asked) != 4 {
		t.Fatalf("read %d pods, want the 4 that started", len(asked))
	}
	for pod, o := range asked {
		if *o.SinceSeconds != 600 || *o.TailLines != 5 || o.Container != "main" || !o.Timestamps {
			t.Errorf("pod %s read with %+v", pod, o)
		}
	}
}

// With -f, a pod that starts after following began (a replacement, a new
// task of a scale-up) is found through the watch and read from its start.
func TestLogsFollowsNewPods(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, objects()...)
	asked := map[string]*corev1.PodLogOptions{}
	podLogs(f, asked)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &testutil.SyncBuffer{}
	done := make(chan error)
	kube, _ := f.KubeClient()
	o := &Options{Follow: true, Tail: 1, MaxStreams: 8, Prefix: true, Name: "pet", Namespace: "team", Client: f.Jobs, Kube: kube}
	o.Out, o.ErrOut = out, out
	go func() { done <- o.Run(ctx) }()
	waitFor(t, func() bool { return strings.Count(out.String(), "\n") >= 8 })
	started := testutil.MakePod(clitest.ElasticJob(), "worker", 3).StartedAt(clitest.Now).Obj()
	if _, err := f.Kube.CoreV1().Pods("team").UpdateStatus(ctx, started, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(out.String(), "[worker-3] step 1 on pet-worker-3") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if asked["pet-worker-3"].TailLines != nil {
		t.Errorf("a pod that started later was read with --tail: %+v", asked["pet-worker-3"])
	}
	if asked["pet-worker-0"].TailLines == nil || !asked["pet-worker-0"].Follow {
		t.Errorf("a pod there at the start was read with %+v", asked["pet-worker-0"])
	}
}

func TestLogsErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"--index alone": {args: []string{"pet", "--index", "1"}, want: "--index needs --role"},
		"no such role":  {args: []string{"pet", "--role", "ps"}, want: `job pet has no role "ps": its roles are [launcher worker]`},
		"no such job":   {args: []string{"nope"}, want: "trainingjob team/nope not found"},
		"no streams":    {args: []string{"pet", "--max-log-requests", "0"}, want: "--max-log-requests 0: at least 1"},
		"attempt 0":     {args: []string{"pet", "--attempt", "0"}, want: "--attempt 0: a task's first pod is its attempt 1"},
		"-p -f":         {args: []string{"pet", "-p", "-f"}, want: "--previous reads ended instances, which write no more: drop -f"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, objects()...), tc.args...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want %q", r.Error, tc.want)
			}
		})
	}
}

// `muster logs -f` ends with the job: once it has finished, the pods are
// read to their end and the command returns by itself.
func TestLogsFollowEndsWithTheJob(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, objects()...)
	podLogs(f, nil)
	out := &testutil.SyncBuffer{}
	done := make(chan error)
	kube, _ := f.KubeClient()
	o := &Options{Follow: true, Tail: -1, MaxStreams: 8, Prefix: true, Name: "pet", Namespace: "team", Client: f.Jobs, Kube: kube}
	o.Out, o.ErrOut = out, out
	go func() { done <- o.Run(context.Background()) }()
	waitFor(t, func() bool { return strings.Count(out.String(), "\n") >= 8 })

	job := clitest.ElasticJob()
	if err := f.Jobs.Get(context.Background(), client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	job.Status.Phase = musterv1.PhaseSucceeded
	apimeta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{Type: string(musterv1.ConditionSucceeded),
		Status: metav1.ConditionTrue, Reason: string(musterv1.ReasonCompletionPolicy)})
	if err := f.Jobs.Status().Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f still following a job that has ended")
	}
}

// A pod that a scale-down removes writes its shutdown output aside: the
// stream says once where it is, and the file holds it.
func TestLogsSetsAsideTheOutputOfAScaledDownPod(t *testing.T) {
	job := clitest.ElasticJob()
	job.Status.Roles = []musterv1.RoleStatus{{Name: "worker", Tasks: []musterv1.TaskStatus{
		{Index: 0, Count: 1, State: musterv1.TaskRunning},
		{Index: 1, Count: 1, State: musterv1.TaskRunning, DeletionPending: true},
	}}}
	objs := []runtime.Object{job}
	for _, p := range clitest.ElasticPods() {
		if p.Name == "pet-worker-1" {
			// Its deletion began between its two lines (at +2 s and +6 s).
			p.DeletionTimestamp = &metav1.Time{Time: clitest.Now.Add(9 * time.Second)}
			p.DeletionGracePeriodSeconds = new(int64(5))
		}
		objs = append(objs, p)
	}
	t.Setenv("TMPDIR", t.TempDir())
	f := clitest.NewFactory(clitest.Options{}, objs...)
	podLogs(f, nil)
	r := clitest.Run(t, NewCmd, f, "pet", "--role", "worker")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if !strings.Contains(r.Out, "[worker-1#3] step 0 on pet-worker-1") || strings.Contains(r.Out, "step 1 on pet-worker-1") {
		t.Errorf("the line before the deletion belongs in the stream, the one after it does not:\n%s", r.Out)
	}
	_, path, ok := strings.Cut(r.Out, "[worker-1#3] removed by a scale-down; its shutdown output is in ")
	if !ok {
		t.Fatalf("no note of the removal:\n%s", r.Out)
	}
	path, _, _ = strings.Cut(path, "\n")
	kept, err := os.ReadFile(path)
	if err != nil || string(kept) != "step 1 on pet-worker-1\n" {
		t.Errorf("kept %q (%v)", kept, err)
	}
}

// --attempt N reads the tasks' Nth pods; when they are gone, it says which
// tasks have moved on and where their ends are told.
func TestLogsAttempt(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, objects()...)
	asked := map[string]*corev1.PodLogOptions{}
	podLogs(f, asked)
	r := clitest.Run(t, NewCmd, f, "pet", "--attempt", "2")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if want := "[worker-2#2] step 0 on pet-worker-2\n[worker-2#2] step 1 on pet-worker-2\n"; r.Out != want || len(asked) != 1 {
		t.Errorf("read %d pods, printed:\n%s\nwant only worker-2's second pod:\n%s", len(asked), r.Out, want)
	}
	// worker-1's second pod was replaced by its third.
	if want := "Not read: the pods of attempt 2 of worker-1 (now #3) are gone: a task's pod is deleted, with its logs, before the next is made; " +
		"`muster describe pet` shows how each task's last pod ended\n"; r.Err != want {
		t.Errorf("said:\n%s\nwant:\n%s", r.Err, want)
	}

	r = clitest.Run(t, NewCmd, f, "pet", "--role", "worker", "--index", "1", "--attempt", "2")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	want := "No logs: trainingjob team/pet in role worker at index 1: the pods of attempt 2 of worker-1 (now #3) are gone: " +
		"a task's pod is deleted, with its logs, before the next is made; `muster describe pet` shows how each task's last pod ended\n"
	if r.Out != "" || r.Err != want {
		t.Errorf("printed %q and\n%s\nwant only\n%s", r.Out, r.Err, want)
	}

	r = clitest.Run(t, NewCmd, f, "pet", "--attempt", "5")
	if r.Error != nil || !strings.Contains(r.Err, "no task of trainingjob team/pet has a started pod of attempt 5 (phase Running)") {
		t.Errorf("error %v, printed:\n%s", r.Error, r.Err)
	}
}

// --previous reads, as kubectl's does, the instance of a pod's container
// before a restart in place, of the pods that have one.
func TestLogsPrevious(t *testing.T) {
	objs := []runtime.Object{clitest.ElasticJob()}
	for _, p := range clitest.ElasticPods() {
		if p.Name == "pet-worker-0" {
			p.Status.ContainerStatuses[0].RestartCount = 1
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137}
		}
		objs = append(objs, p)
	}
	f := clitest.NewFactory(clitest.Options{}, objs...)
	asked := map[string]*corev1.PodLogOptions{}
	podLogs(f, asked)
	r := clitest.Run(t, NewCmd, f, "pet", "-p")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(asked) != 1 || asked["pet-worker-0"] == nil || !asked["pet-worker-0"].Previous {
		t.Errorf("asked %v, want the previous instance of pet-worker-0 alone", asked)
	}
	if !strings.HasPrefix(r.Out, "[worker-0] step 0 on pet-worker-0\n") {
		t.Errorf("printed:\n%s", r.Out)
	}

	r = clitest.Run(t, NewCmd, f, "pet", "--previous", "--role", "launcher")
	if r.Error != nil || r.Out != "" || !strings.Contains(r.Err, "No logs: no container of trainingjob team/pet's pods in role launcher has restarted in place") {
		t.Errorf("error %v, printed %q and:\n%s", r.Error, r.Out, r.Err)
	}
}
