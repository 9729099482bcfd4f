package printers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// An MPI job shows the SSH Secret its status names, or that it has none
// yet.
func TestDescribeMPISSHSecret(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{MPI: &musterv1.MPIRuntime{}}).Role("worker", 1).Role("launcher", 1).Obj()
	describe := func() string {
		var out strings.Builder
		if err := Describe(&out, job, nil, time.Unix(1000, 0)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := describe(); !strings.Contains(got, "MPI:\n  SSH Secret:   - (not made yet") {
		t.Errorf("a job whose status names no Secret:\n%s", got)
	}
	job.Status.MPI.SSHSecretName = "j-ssh-k7x2p"
	if got := describe(); !strings.Contains(got, "MPI:\n  SSH Secret:   j-ssh-k7x2p\n") {
		t.Errorf("a job whose status names its Secret:\n%s", got)
	}
}

func TestMessageEnd(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"empty":                       {"", ""},
		"one line":                    {"the container used 8Gi, its limit", "the container used 8Gi, its limit"},
		"lines that fit, on one line": {"the container used 8Gi,\nits limit\n", "the container used 8Gi, its limit"},
		"a traceback: its exception": {
			"…tiprocessing/api.py\", line 162, in to_map\n    map[i] = val_or_map.get(i, Std.NONE)\n             ^^^^^^^^^^^^^^\n" +
				"AttributeError: 'NoneType' object has no attribute 'get'\n",
			"… AttributeError: 'NoneType' object has no attribute 'get'",
		},
		"what fits before the exception, without the markers": {
			"Traceback (most recent call last):\n  File \"/opt/muster/script/train.py\", line 12, in <module>\n    f(x)\n    ^^^^\nKeyError: 'lr'",
			"… File \"/opt/muster/script/train.py\", line 12, in <module> f(x) KeyError: 'lr'",
		},
		"the last line whole, however long": {
			"Traceback (most recent call last):\nRuntimeError: " + long,
			"… RuntimeError: " + long,
		},
		"a kept end's own mark is not doubled": {"…ld=4 rank=3\nValueError: bad batch", "…ld=4 rank=3 ValueError: bad batch"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := messageEnd(tc.in); got != tc.want {
				t.Errorf("messageEnd(%q)\n= %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

const long = "NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, unhandled system error, NCCL version 2.18.1"

// The attempts of a job that restarts in place say how their pods went on.
func TestDescribeAttemptsThatRestartedInPlace(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("worker", 3).Obj()
	job.Status.Attempts = []musterv1.AttemptStatus{
		{ID: 0, Completion: &musterv1.CompletionStatus{Reason: musterv1.ReasonJobRestarting, Message: "j-worker-1 failed"},
			PodRestarts: &musterv1.PodRestarts{InPlace: 2, Recreated: 1, Message: "j-worker-2 (it has ended (failed))"}},
		{ID: 1, Completion: &musterv1.CompletionStatus{Reason: musterv1.ReasonJobRestarting, Message: "j-worker-0 failed"}},
	}
	var out strings.Builder
	if err := Describe(&out, job, nil, time.Unix(1000, 0)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"PODS", "2 in place, 1 re-created", "j-worker-1 failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
}

// A job that reports its progress shows how far it is in get's PROGRESS
// and ETA columns, and what it reported in describe.
func TestProgressInGetAndDescribe(t *testing.T) {
	now := time.Unix(10000, 0)
	job := testutil.MakeJob("j", "ns").Role("worker", 2).Obj()
	job.Spec.Progress = &musterv1.Progress{Port: 28555, IntervalSeconds: 30}
	table, err := JobTable(job, now)
	if err != nil {
		t.Fatal(err)
	}
	if cells := table.Rows[0].Cells; cells[4] != "-" || cells[5] != "-" {
		t.Errorf("no report yet: PROGRESS %v, ETA %v", cells[4], cells[5])
	}
	var out strings.Builder
	if err := Describe(&out, job, nil, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Progress:\n  <no report yet: read from :28555/progress every 30s>") {
		t.Errorf("describe before a report:\n%s", out.String())
	}

	eta := metav1.NewTime(now.Add(8 * time.Minute))
	job.Status.Progress = &musterv1.ProgressStatus{Step: new(int64(420)), TotalSteps: new(int64(1000)), Percent: new(int32(42)),
		SamplesPerSecond: "812.5", EstimatedCompletionTime: &eta, LastProgressTime: new(metav1.NewTime(now.Add(-10 * time.Second))),
		Reporter: "j-worker-0", Metrics: []musterv1.ProgressMetric{{Name: "loss", Value: "0.4312"}, {Name: "lr", Value: "0.0003"}}}
	if table, err = JobTable(job, now); err != nil {
		t.Fatal(err)
	}
	if cells := table.Rows[0].Cells; cells[4] != "42%" || cells[5] != "8m" {
		t.Errorf("PROGRESS %v, ETA %v", cells[4], cells[5])
	}
	// top: the progress, and the program's throughput where the
	// autoscaler has none.
	top, err := TopTable(job, now)
	if err != nil {
		t.Fatal(err)
	}
	if cells := top.Rows[0].Cells; cells[4] != "42%" || cells[5] != "812.5/s" || cells[6] != "10s" {
		t.Errorf("top: PROGRESS %v, THROUGHPUT %v, SAMPLED %v", cells[4], cells[5], cells[6])
	}
	out.Reset()
	if err := Describe(&out, job, nil, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  Done:         42%\n", "  Step:         420 of 1000\n", "  Samples/s:    812.5\n", "  ETA:          8m (",
		"reported by j-worker-0\n", "  METRIC        VALUE\n  loss          0.4312\n  lr            0.0003\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe shows no %q:\n%s", want, out.String())
		}
	}
	// Done: no ETA.
	job.Status.Progress.EstimatedCompletionTime = new(metav1.NewTime(now))
	if got := ETA(job.Status.Progress, now); got != "-" {
		t.Errorf("ETA of a job done: %q", got)
	}
	if got := Progress(&musterv1.ProgressStatus{Epoch: new(int64(3))}); got != "epoch 3" {
		t.Errorf("an epoch without a total: %q", got)
	}
}

// A task whose pod cannot start says why beside its state.
func TestDescribeSaysWhyATaskWaits(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Role("worker", 2).Obj()
	job.Status.Roles = []musterv1.RoleStatus{{Name: "worker", Tasks: []musterv1.TaskStatus{
		{Index: 0, State: musterv1.TaskRunning, Attempts: 1},
		{Index: 1, State: musterv1.TaskPending, Attempts: 1, Waiting: "muster-restart-watcher: ImagePullBackOff"},
	}}}
	var out strings.Builder
	if err := Describe(&out, job, nil, time.Unix(1000, 0)); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "Pending (muster-restart-watcher: ImagePullBackOff)") {
		t.Errorf("the waiting task does not say why:\n%s", got)
	}
}
