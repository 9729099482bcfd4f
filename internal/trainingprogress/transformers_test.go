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
	termination := filepath.Join(t.TempDir(), "termination-log")
	cmd := exec.Command(python, "-c", trainerEvents, termination)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join("..", "..", "examples", "progress"), "MUSTER_PROGRESS_PORT="+strconv.Itoa(port), "RANK=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
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
