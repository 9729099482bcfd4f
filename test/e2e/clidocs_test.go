package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// docBlock is a ```console block of docs/cli.md: commands ($ lines), each
// with the output the document shows for it.
type docBlock struct {
	line     int
	skip     string // why the block is not run; empty: it is
	commands []docCommand
}

type docCommand struct {
	text   string
	output []string
	skip   string
}

// notRun is the mark, on the lines just above a block's fence, of what
// cannot run on the local cluster:
//
//	<!-- not run: REASON -->              the whole block
//	<!-- not run: `COMMAND`: REASON -->   one command of it (the text after $)
var notRun = regexp.MustCompile("^<!-- not run: (?:`([^`]+)`: )?(.+) -->$")

// parseCLIDoc reads the console blocks of a document.
func parseCLIDoc(t *testing.T, path string) []docBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var (
		blocks []docBlock
		skips  []map[string]string // per block: command -> why it is not run
		marks  []string            // the not-run comments just above a fence
		in     bool
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && line == "```console":
			in = true
			b, cmds := docBlock{line: n}, map[string]string{}
			for _, m := range marks {
				sub := notRun.FindStringSubmatch(m)
				if sub[1] == "" {
					b.skip = sub[2]
				} else {
					cmds[sub[1]] = sub[2]
				}
			}
			blocks, skips, marks = append(blocks, b), append(skips, cmds), nil
		case in && line == "```":
			in = false
		case in && strings.HasPrefix(line, "$ "):
			b := &blocks[len(blocks)-1]
			b.commands = append(b.commands, docCommand{text: strings.TrimPrefix(line, "$ ")})
		case in && len(blocks[len(blocks)-1].commands) > 0:
			cmds := blocks[len(blocks)-1].commands
			cmds[len(cmds)-1].output = append(cmds[len(cmds)-1].output, line)
		case !in && notRun.MatchString(line):
			marks = append(marks, line)
		case !in && strings.HasPrefix(line, "<!-- not run"):
			t.Errorf("%s:%d: %q is not a not-run mark: <!-- not run: REASON --> or <!-- not run: `COMMAND`: REASON -->", path, n, line)
		case !in && len(marks) > 0 && line != "":
			t.Errorf("%s:%d: a not-run mark is followed by %q, not by a console block", path, n, line)
			marks = nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		for j, c := range blocks[i].commands {
			if why, ok := skips[i][c.text]; ok {
				blocks[i].commands[j].skip = why
				delete(skips[i], c.text)
			}
		}
		for cmd := range skips[i] {
			t.Errorf("%s:%d: a not-run mark names `%s`, which the block below it does not run", path, blocks[i].line, cmd)
		}
	}
	return blocks
}

// TestCLIDocExamples runs the command examples of docs/cli.md, in order,
// against jobs like the ones it shows (team/pet, team/bad, research/big),
// from a folder with the files its examples name, the shell's namespace
// being team. For each command:
//   - it fails exactly when the document shows an error (a line starting
//     with "error:" or "Error:");
//   - every line of what it prints that names a result (starting with
//     "trainingjob.muster.dev/", "pod/", "error:", "Error:") is printed as
//     shown;
//   - a table has the header shown.
//
// Between blocks the jobs are put back as they were. What cannot run here
// is marked in the document (notRun).
func TestCLIDocExamples(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	blocks := parseCLIDoc(t, filepath.Join(cluster.Root, "docs", "cli.md"))
	if t.Failed() {
		t.FailNow()
	}
	w := newDocWorld(t, g)
	start := time.Now()
	ran := 0
	for _, b := range blocks {
		if b.skip != "" || len(b.commands) == 0 {
			continue
		}
		w.reset()
		for _, c := range b.commands {
			if c.skip != "" {
				continue
			}
			ran++
			out, err := w.run(c.text)
			where := fmt.Sprintf("docs/cli.md:%d: $ %s", b.line, c.text)
			wantErr := false
			for _, l := range c.output {
				wantErr = wantErr || strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "Error:")
			}
			if wantErr {
				g.Expect(err).To(gomega.HaveOccurred(), "%s succeeded; the document shows an error. It printed:\n%s", where, out)
			} else {
				g.Expect(err).NotTo(gomega.HaveOccurred(), "%s failed. It printed:\n%s", where, out)
			}
			got := strings.Split(out, "\n")
			for _, l := range c.output {
				if resultLine(l) {
					g.Expect(got).To(gomega.ContainElement(l), "%s does not print the line the document shows. It printed:\n%s", where, out)
				}
			}
			if len(c.output) > 0 && header(c.output[0]) {
				g.Expect(strings.Fields(got[0])).To(gomega.Equal(strings.Fields(c.output[0])),
					"%s prints another table header than the document's. It printed:\n%s", where, out)
			}
		}
	}
	g.Expect(ran).To(gomega.BeNumerically(">", 20), "too few commands ran: are the blocks still ```console blocks?")
	t.Logf("%d documented commands in %s", ran, time.Since(start).Round(time.Second))
}

func resultLine(l string) bool {
	for _, p := range []string{"trainingjob.muster.dev/", "pod/", "error:", "Error:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

var headerRE = regexp.MustCompile(`^[A-Z][A-Z ]+[A-Z]$`)

// header is whether a line is a table's header: capitals and spaces, with
// several columns.
func header(l string) bool {
	return headerRE.MatchString(l) && len(strings.Fields(l)) > 2
}

// docWorld is the cluster and the folder the documented commands run in.
type docWorld struct {
	t          *testing.T
	g          gomega.Gomega
	dir        string
	kubeconfig string
	kubectlBin string
	env        []string
	// petReady is pet's state (petState) once reset made it.
	petReady string
}

// The document's jobs: pet runs (a launcher and three scalable workers
// that print a step a second), bad has failed, big has succeeded.
var (
	petJob = `apiVersion: muster.dev/v1beta1
kind: TrainingJob
metadata: {name: pet, namespace: team}
spec:
  scaling:
    replicas: 3
    roles: [{name: worker, minReplicas: 2, maxReplicas: 4}]
  roles:
  - name: launcher
    replicas: 1
    restartScope: Task
    template: {spec: {terminationGracePeriodSeconds: 1, containers: [{name: main, image: ` + image + `, command: [sh, -c, ` + stepLoop + `]}]}}
  - name: worker
    restartScope: Task
    template: {spec: {terminationGracePeriodSeconds: 1, containers: [{name: main, image: ` + image + `, command: [sh, -c, ` + stepLoop + `]}]}}
`
	stepLoop = `'i=0; while true; do echo "step $i on $MUSTER_POD_NAME"; i=$((i+1)); sleep 1; done'`
	badJob   = `apiVersion: muster.dev/v1beta1
kind: TrainingJob
metadata: {name: bad, namespace: team}
spec:
  roles:
  - name: worker
    replicas: 2
    restartPolicy: Never
    template: {spec: {containers: [{name: main, image: ` + image + `, command: [sh, -c, 'echo out of memory; exit 1']}]}}
`
	bigJob = `apiVersion: muster.dev/v1beta1
kind: TrainingJob
metadata: {name: big, namespace: research}
spec:
  roles:
  - name: worker
    template: {spec: {containers: [{name: main, image: ` + image + `, command: [sh, -c, 'echo trained']}]}}
`
	// mnistJob is job.yaml, a job of a launcher and workers.
	mnistJob = `apiVersion: muster.dev/v1beta1
kind: TrainingJob
metadata: {name: mnist}
spec:
  roles:
  - name: launcher
    template: {spec: {containers: [{name: main, image: ` + image + `, command: [sh, -c, 'sleep 30']}]}}
  - name: worker
    replicas: 2
    template: {spec: {containers: [{name: main, image: ` + image + `, command: [sh, -c, 'sleep 30']}]}}
`
)

func newDocWorld(t *testing.T, g gomega.Gomega) *docWorld {
	bins, _, err := cluster.BinaryPaths()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	dir := t.TempDir()
	w := &docWorld{t: t, g: g, dir: dir, kubeconfig: filepath.Join(dir, ".kubeconfig"), kubectlBin: bins.Kubectl()}
	for _, ns := range []string{"team", "research"} {
		cluster.NamespaceNamed(t, g, ns)
	}
	// The shell's namespace is team, as in the document.
	data, err := os.ReadFile(cluster.Kubeconfig())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(os.WriteFile(w.kubeconfig, data, 0o600)).To(gomega.Succeed())
	w.kubectl("config", "set-context", "--current", "--namespace=team")
	w.env = append(os.Environ(), "PATH="+filepath.Dir(muster(t))+":"+os.Getenv("PATH"), "KUBECONFIG="+w.kubeconfig, "HOME="+dir)

	// The files the examples name.
	g.Expect(os.Symlink(filepath.Join(cluster.Root, "examples"), filepath.Join(dir, "examples"))).To(gomega.Succeed())
	writeFile(t, dir, "job.yaml", mnistJob)
	writeFile(t, dir, "train.py", "print('training')\n")
	writeFile(t, dir, "jobs/beta.yaml", strings.ReplaceAll(bigJob, "{name: big, namespace: research}", "{name: beta}"))
	writeFile(t, dir, "jobs/more/gamma.yaml", strings.ReplaceAll(bigJob, "{name: big, namespace: research}", "{name: gamma}"))
	writeFile(t, dir, "new/a.yaml", strings.ReplaceAll(strings.ReplaceAll(bigJob, "{name: big, namespace: research}", "{name: alpha}"),
		"- name: worker\n", "- name: worker\n    replicas: 20000\n"))
	writeFile(t, dir, "new/b.yaml", strings.ReplaceAll(bigJob, "{name: big, namespace: research}", "{name: beta}"))
	importer := filepath.Join(cluster.Root, "internal", "importer", "testdata")
	ctr, err := os.ReadFile(filepath.Join(importer, "volcano", "ctr.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	writeFile(t, dir, "ctr-volcano.yaml", string(ctr))
	torch, err := os.ReadFile(filepath.Join(importer, "trainjob", "torch.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	runtime, trainjob, ok := strings.Cut(string(torch), "\n---\n")
	g.Expect(ok).To(gomega.BeTrue(), "trainjob/torch.yaml is no longer a runtime and a TrainJob")
	writeFile(t, dir, "runtime.yaml", runtime)
	writeFile(t, dir, "trainjob.yaml", trainjob)

	// bad fails, big succeeds, pet runs.
	writeFile(t, dir, ".fixtures/bad.yaml", badJob)
	writeFile(t, dir, ".fixtures/big.yaml", bigJob)
	writeFile(t, dir, ".fixtures/pet.yaml", petJob)
	w.kubectl("create", "-f", filepath.Join(dir, ".fixtures", "bad.yaml"), "-f", filepath.Join(dir, ".fixtures", "big.yaml"))
	g.Eventually(func() string { return w.phase("team", "bad") }, 2*time.Minute, time.Second).Should(gomega.Equal("Failed"))
	g.Eventually(func() string { return w.phase("research", "big") }, 2*time.Minute, time.Second).Should(gomega.Equal("Succeeded"))
	return w
}

// run runs a documented command line in the folder, as a shell would.
func (w *docWorld) run(line string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", line)
	cmd.Dir, cmd.Env = w.dir, w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *docWorld) kubectl(args ...string) string {
	w.t.Helper()
	out, err := exec.Command(w.kubectlBin, append([]string{"--kubeconfig", w.kubeconfig}, args...)...).CombinedOutput()
	w.g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}

func (w *docWorld) phase(ns, name string) string {
	out, _ := exec.Command(w.kubectlBin, "--kubeconfig", w.kubeconfig, "get", "trainingjob", name, "-n", ns,
		"-o", "jsonpath={.status.phase}").CombinedOutput()
	return string(out)
}

// reset puts the jobs back as the document shows them: only pet, bad and
// big, and pet running as created.
func (w *docWorld) reset() {
	w.t.Helper()
	for _, ns := range []string{"team", "research"} {
		w.kubectl("delete", "trainingjobs", "-n", ns, "--wait", "--ignore-not-found",
			"--field-selector", "metadata.name!=pet,metadata.name!=bad,metadata.name!=big")
	}
	w.kubectl("delete", "pods", "-n", "team", "-l", "muster.dev/debug-copy-of", "--wait", "--ignore-not-found")
	if w.petState() == w.petReady && w.petPods() == 4 {
		return
	}
	w.kubectl("delete", "trainingjob", "pet", "-n", "team", "--wait", "--ignore-not-found")
	w.kubectl("create", "-f", filepath.Join(w.dir, ".fixtures", "pet.yaml"))
	w.petRunning()
	// In its second attempt, as the document shows it.
	out, err := w.run("muster restart pet")
	w.g.Expect(err).NotTo(gomega.HaveOccurred(), "muster restart pet: %s", out)
	w.g.Eventually(func() string { return w.petState() }, time.Minute, 500*time.Millisecond).Should(gomega.HaveSuffix(" 1 Running"))
	w.petRunning()
	w.petReady = w.petState()
}

// petState is pet's generation, attempt and phase.
func (w *docWorld) petState() string {
	out, err := exec.Command(w.kubectlBin, "--kubeconfig", w.kubeconfig, "get", "trainingjob", "pet", "-n", "team",
		"-o", "jsonpath={.metadata.generation} {.status.attempt} {.status.phase}").CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

func (w *docWorld) petRunning() {
	w.t.Helper()
	w.g.Eventually(func() int { return w.petPods() }, 2*time.Minute, 500*time.Millisecond).Should(gomega.Equal(4), "pet's 4 pods running")
	w.g.Eventually(func() string { return w.phase("team", "pet") }, time.Minute, 500*time.Millisecond).Should(gomega.Equal("Running"))
}

// petPods counts pet's running pods.
func (w *docWorld) petPods() int {
	pods, err := cs.CoreV1().Pods("team").List(context.Background(), metav1.ListOptions{LabelSelector: "muster.dev/job-name=pet"})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}
