package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/test/framework"
)

// allReduce is a user's first torchrun script: every rank adds its rank
// into one tensor over gloo, as often as --epochs says.
const allReduce = `import argparse
import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
for _ in range(args.epochs):
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    assert t.item() == world * (world - 1) / 2, t.item()
print(f"rank {rank} of {world}: all-reduced {args.epochs} times", flush=True)
dist.destroy_process_group()
`

// crash fails as training code does: an exception at the end of a
// traceback longer than status keeps of a message.
const crash = `def step(n):
    if n == 0:
        raise ValueError("learning rate must be positive, got -0.1")
    return step(n - 1)

step(12)
`

// helpExamples are the commands of `muster run --help`'s examples.
func helpExamples(t *testing.T, g gomega.Gomega) []string {
	t.Helper()
	out, err := exec.Command(muster(t), "run", "--help").CombinedOutput()
	g.Expect(err).NotTo(gomega.HaveOccurred(), "muster run --help: %s", out)
	_, examples, ok := strings.Cut(string(out), "Examples:\n")
	g.Expect(ok).To(gomega.BeTrue(), "muster run --help has no examples:\n%s", out)
	var cmds []string
	for _, l := range strings.Split(examples, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "muster run ") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// The examples of `muster run --help`, run on the local cluster as a user
// would (train.py a small gloo all-reduce), end Succeeded: a job that
// starts torchrun needs nothing of the user that the help does not say.
func TestRunHelpExamplesSucceed(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	w := cliWorld(t, ns)
	writeFile(t, w.dir, "train.py", allReduce)

	examples := helpExamples(t, g)
	g.Expect(examples).To(gomega.ContainElement(gomega.ContainSubstring("--script train.py")), "no torchrun example")
	var created []string
	for _, line := range examples {
		out, err := w.run(line)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "$ %s\n%s", line, out)
		if strings.Contains(line, "--dry-run") {
			g.Expect(out).To(gomega.ContainSubstring("kind: TrainingJob"), "$ %s", line)
			continue
		}
		name := strings.Fields(line)[2]
		g.Expect(out).To(gomega.ContainSubstring("trainingjob.muster.dev/"+name+" created"), "$ %s", line)
		created = append(created, name)
	}
	for _, name := range created {
		got := &musterv1.TrainingJob{}
		g.Eventually(func(g gomega.Gomega) {
			g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got)).To(gomega.Succeed())
			if got.Status.Phase == musterv1.PhaseFailed {
				gomega.StopTrying(name + " failed").Now()
			}
			g.Expect(got.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded))
		}, jobTimeout, time.Second).Should(gomega.Succeed(), func() string { return w.describe(name) + w.logs(name) })
		g.Expect(got.Status.Restarts.Total).To(gomega.BeZero(), "%s needed restarts:\n%s", name, w.describe(name))
	}
	// The torchrun example's workers all-reduced over the whole world.
	g.Expect(w.logs("mnist")).To(gomega.MatchRegexp(`(?m)^\[worker-0\] rank \d of 4: all-reduced 5 times$`))
}

// A job that fails says why where the user looks: describe's recent
// failures end with the exception, and logs reaches the task's pods that
// are still there, saying which are gone. Re-created, so that the failed
// pods stay: a pod restarted in place runs its container again after a
// failure, and the job's end deletes it as a running pod.
func TestRunFailureSaysWhy(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	w := cliWorld(t, ns)
	writeFile(t, w.dir, "crash.py", crash)

	out, err := w.run("muster run crash --image python:3.11 --runtime none --nnodes 1 --backoff-limit 1 --restart-mode Recreate --script crash.py")
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	framework.WaitJob(g, c, ns, "crash", jobTimeout, framework.PhaseIs(musterv1.PhaseFailed))

	out, err = w.run("muster describe crash")
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(out).To(gomega.MatchRegexp(`(?m)^\s+worker-0\s.*code 1.*ValueError: learning rate must be positive, got -0\.1$`),
		"describe's recent failures do not end with the exception")

	// The second pod is there, with the whole traceback; the first was
	// replaced by it.
	out, err = w.run("muster logs crash")
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(out).To(gomega.ContainSubstring("[worker-0#2] Traceback (most recent call last):"))
	g.Expect(out).To(gomega.ContainSubstring("[worker-0#2] ValueError: learning rate must be positive, got -0.1"))
	out, err = w.run("muster logs crash --attempt 2 --prefix=false --tail 1")
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(out).To(gomega.Equal("ValueError: learning rate must be positive, got -0.1\n"))
	out, err = w.run("muster logs crash --attempt 1")
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(out).To(gomega.ContainSubstring("No logs: trainingjob " + ns + "/crash: the pods of attempt 1 of worker-0 (now #2) are gone"))
	out, err = w.run("muster logs crash -p")
	g.Expect(err).NotTo(gomega.HaveOccurred(), out)
	g.Expect(out).To(gomega.ContainSubstring("No logs: no container of trainingjob " + ns + "/crash's pods has restarted in place"))
}

// cliRun is a folder to run muster in, as a shell would, against the test
// cluster and a namespace.
type cliRun struct {
	dir string
	env []string
	ns  string
}

func cliWorld(t *testing.T, ns string) *cliRun {
	return &cliRun{dir: t.TempDir(), ns: ns,
		env: append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig(), "PATH="+filepath.Dir(muster(t))+":"+os.Getenv("PATH"))}
}

// run runs a command line in the folder, muster's in the namespace.
func (r *cliRun) run(line string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// In the test's namespace, as a kubeconfig's context would put it.
	line = namespaced.ReplaceAllString(line, "muster $1 -n "+r.ns+" ")
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", line)
	cmd.Dir, cmd.Env = r.dir, r.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var namespaced = regexp.MustCompile(`^muster (\S+) `)

func (r *cliRun) describe(name string) string {
	out, _ := r.run("muster describe " + name)
	return "\n$ muster describe " + name + "\n" + out
}

func (r *cliRun) logs(name string) string {
	out, _ := r.run("muster logs " + name)
	return out
}
