package cli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/muster-dev/muster/internal/cli/clitest"
)

func run(t *testing.T, o Options, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	o.IOStreams = genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out}
	cmd := NewRootCommand(o)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// With no kubeconfig at all, the error says how to point muster at a
// cluster, not client-go's KUBERNETES_MASTER or localhost:8080.
func TestNoClusterSaysWhatToDo(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := run(t, Options{ConfigFlags: genericclioptions.NewConfigFlags(false)}, "get")
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig") || !strings.Contains(err.Error(), "muster-dev env") ||
		strings.Contains(err.Error(), "KUBERNETES_MASTER") || strings.Contains(err.Error(), "8080") {
		t.Fatalf("got %v", err)
	}
}

// TAB after a verb lists the namespace's jobs, with their phase.
func TestCompletesJobNames(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob(), clitest.FailedJob(), clitest.QueuedJob())
	for _, verb := range []string{"describe", "logs", "scale", "wait", "delete", "suspend", "top", "debug"} {
		out, err := run(t, Options{Factory: f}, "__complete", verb, "")
		if err != nil {
			t.Fatal(err)
		}
		if want := "bad\tFailed\npet\tRunning\n:4\n"; !strings.Contains(out, want) {
			t.Errorf("%s: got %q, want it to hold %q", verb, out, want)
		}
	}
	out, _ := run(t, Options{Factory: f}, "__complete", "logs", "pet", "")
	if strings.Contains(out, "bad") {
		t.Errorf("logs takes one job, yet a second was offered: %q", out)
	}
	out, _ = run(t, Options{Factory: f}, "__complete", "debug", "pet", "--task", "w")
	if want := "worker/0\tRunning\nworker/1\tRunning\nworker/2\tRunning\n:4\n"; !strings.Contains(out, want) {
		t.Errorf("debug --task: got %q, want it to hold %q", out, want)
	}
}

func TestRunAsKubectlPlugin(t *testing.T) {
	if got := commandName("/usr/local/bin/kubectl-muster"); got != "kubectl muster" {
		t.Errorf("got %q", got)
	}
	if got := commandName("./bin/muster"); got != "muster" {
		t.Errorf("got %q", got)
	}
	out, err := run(t, Options{Factory: clitest.NewFactory(clitest.Options{}), Name: "kubectl muster"}, "get", "--help")
	if err != nil || !strings.Contains(out, "kubectl muster get [JOB...]") {
		t.Errorf("help speaks of %q, %v", out, err)
	}
}
