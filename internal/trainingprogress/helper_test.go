package trainingprogress_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/muster-dev/muster/internal/trainingprogress"
)

// trainerEvents plays the calls HuggingFace's Trainer makes on a callback
// (logging steps, then the end of training) against the helper's
// transformers_callback, prints what the helper serves on /progress after
// the last logged step, and leaves the termination message in argv[1].
// transformers itself is a stand-in with TrainerCallback alone: the
// callback needs nothing else of it.
const trainerEvents = `
import sys, types, urllib.request
stub = types.ModuleType("transformers")
stub.TrainerCallback = type("TrainerCallback", (), {})
sys.modules["transformers"] = stub
import muster_progress
muster_progress._TERMINATION_LOG = sys.argv[1]
cb = muster_progress.transformers_callback()
state = types.SimpleNamespace(global_step=0, max_steps=40, epoch=0.0)
for step in range(1, 31):
    state.global_step, state.epoch = step, step / 20
    cb.on_step_end(None, state, None)
    if step % 10 == 0:
        cb.on_log(None, state, None, logs={"loss": 1.0 / step, "learning_rate": 5e-5, "grad_norm": 0.5, "epoch": state.epoch})
cb.on_log(None, state, None, logs={"train_samples_per_second": 12.5, "train_runtime": 4.0, "total_flos": 1e12})
print(urllib.request.urlopen("http://127.0.0.1:%s/progress" % muster_progress.os.environ["MUSTER_PROGRESS_PORT"]).read().decode())
state.global_step = 40
cb.on_train_end(None, state, None)
`

// The examples' helper reports a Transformers Trainer's progress in the
// format the operator reads: its step out of max_steps, the epoch, the
// numbers it logs as metrics (not the epoch, step or FLOPs), its
// samples-per-second as the rate; at the end of training the last report
// is the termination message.
func TestTransformersCallbackReportsInTheOperatorsFormat(t *testing.T) {
	termination := filepath.Join(t.TempDir(), "termination-log")
	out := runHelper(t, trainerEvents, []string{termination}, "RANK=0")
	served, err := trainingprogress.Parse(out)
	if err != nil {
		t.Fatalf("the operator refuses what the helper serves: %v\n%s", err, out)
	}
	if *served.Step != 30 || *served.TotalSteps != 40 || *served.Epoch != 1 || served.SamplesPerSecond == nil || *served.SamplesPerSecond != 12.5 {
		t.Errorf("served %s", out)
	}
	for name, want := range map[string]float64{"loss": 1.0 / 30, "learning_rate": 5e-5, "grad_norm": 0.5, "train_runtime": 4} {
		if served.Metrics[name] != want {
			t.Errorf("metric %s = %v, want %v (served %s)", name, served.Metrics[name], want, out)
		}
	}
	for _, name := range []string{"epoch", "total_flos", "train_samples_per_second"} {
		if _, ok := served.Metrics[name]; ok {
			t.Errorf("%s is not a metric of the training: %s", name, out)
		}
	}
	last, err := os.ReadFile(termination)
	if err != nil {
		t.Fatalf("no termination message: %v", err)
	}
	final, err := trainingprogress.Parse(last)
	if err != nil || *final.Step != 40 {
		t.Errorf("termination message %s (%v), want step 40", last, err)
	}
}

// servesOrNot reports once, then prints what a GET of /progress answers on
// the helper's port: the report, or "nothing" when it serves none.
const servesOrNot = `
import os, urllib.request
import muster_progress
muster_progress.report(step=1, total_steps=2)
try:
    print(urllib.request.urlopen("http://127.0.0.1:%s/progress" % os.environ["MUSTER_PROGRESS_PORT"], timeout=5).read().decode())
except OSError:
    print("nothing")
`

// One process of a job serves its report: global rank 0, by whichever
// launcher's variable names the rank (torchrun's, Open MPI's, MPICH's,
// Paddle's), the first set winning; a process with none of them is the
// only one.
func TestOnlyGlobalRankZeroServesTheReport(t *testing.T) {
	cases := map[string]struct {
		env    []string
		serves bool
	}{
		"no rank at all":                      {nil, true},
		"torchrun rank 0":                     {[]string{"RANK=0"}, true},
		"torchrun rank 1":                     {[]string{"RANK=1"}, false},
		"Open MPI rank 0":                     {[]string{"OMPI_COMM_WORLD_RANK=0"}, true},
		"Open MPI rank 2":                     {[]string{"OMPI_COMM_WORLD_RANK=2"}, false},
		"MPICH rank 1":                        {[]string{"PMI_RANK=1"}, false},
		"Paddle trainer 0":                    {[]string{"PADDLE_TRAINER_ID=0"}, true},
		"Paddle trainer 1":                    {[]string{"PADDLE_TRAINER_ID=1"}, false},
		"RANK wins over the MPI rank":         {[]string{"RANK=1", "OMPI_COMM_WORLD_RANK=0"}, false},
		"the MPI rank wins over Paddle's one": {[]string{"OMPI_COMM_WORLD_RANK=0", "PADDLE_TRAINER_ID=3"}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := strings.TrimSpace(string(runHelper(t, servesOrNot, nil, tc.env...)))
			if served := out != "nothing"; served != tc.serves {
				t.Fatalf("served %q, want serving: %v", out, tc.serves)
			}
			if tc.serves {
				if r, err := trainingprogress.Parse([]byte(out)); err != nil || *r.Step != 1 {
					t.Errorf("served %q (%v)", out, err)
				}
			}
		})
	}
}

// runHelper runs script with the examples' helper importable, a free
// MUSTER_PROGRESS_PORT and env (the launcher's rank variables cleared
// first), and returns its standard output.
func runHelper(t *testing.T, script string, args []string, env ...string) []byte {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 runs the examples' helper: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PADDLE_TRAINER_ID":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PYTHONPATH="+filepath.Join("..", "..", "examples", "progress"), "MUSTER_PROGRESS_PORT="+strconv.Itoa(port))
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	return out
}
