package printers

import (
	"strings"
	"testing"
	"time"

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
