package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spinner is the waiting line on a terminal: a frame, what it waits for,
// and for how long.
var spinner = regexp.MustCompile(`[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for trainingjob \S+ to be Succeeded: now \w+.* \((\d+)s\)`)

// TestCLIWaitOnATerminal: muster create, then muster wait on a terminal
// shows a spinner that counts the seconds and gives way to the result; the
// same wait piped prints plain lines, with no terminal control sequences.
func TestCLIWaitOnATerminal(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	dir := t.TempDir()
	term := newTerminal(t, dir)
	slow := "echo started; sleep 8; echo finished"
	writeFile(t, dir, "slow.yaml", shellJob("slow", 1, "Never", slow))
	writeFile(t, dir, "piped.yaml", shellJob("piped", 1, "Never", slow))
	writeFile(t, dir, "raw.yaml", shellJob("raw", 1, "Never", slow))

	out, code := term.run(time.Minute, "muster create -n "+ns+" -f slow.yaml")
	g.Expect(code).To(gomega.BeZero(), out)
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("trainingjob.muster.dev/slow created"))

	term.clear("main")
	start := time.Now()
	term.start("main", "muster wait slow -n "+ns+" --for=condition=Succeeded --timeout=2m")
	// The spinner, still turning a few seconds in.
	screen := term.waitScreen("main", time.Minute, "the spinner at 2s or more", func(s string) bool {
		m := spinner.FindStringSubmatch(s)
		return m != nil && m[1] != "0" && m[1] != "1"
	})
	g.Expect(screen).To(gomega.ContainSubstring("waiting for trainingjob " + ns + "/slow to be Succeeded"))
	out, code = term.wait("main", 2*time.Minute)
	g.Expect(code).To(gomega.BeZero(), out)
	// The spinner's line is cleared: only the result is left.
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("trainingjob.muster.dev/slow condition met"))
	t.Logf("wait on a terminal: %s", time.Since(start).Round(time.Second))

	// Piped: plain lines, one per change (stderr, here joined to the pipe),
	// then the result; cat -v would show an escape as ^[ and a carriage
	// return as ^M.
	out, code = term.run(time.Minute, "muster create -n "+ns+" -f piped.yaml -f raw.yaml")
	g.Expect(code).To(gomega.BeZero(), out)
	out, code = term.run(2*time.Minute, "muster wait piped -n "+ns+" --for=condition=Succeeded --timeout=2m 2>&1 | cat -v")
	g.Expect(code).To(gomega.BeZero(), out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(len(lines)).To(gomega.BeNumerically(">=", 2), out)
	for _, l := range lines[:len(lines)-1] {
		g.Expect(l).To(gomega.HavePrefix("waiting for trainingjob "+ns+"/piped to be Succeeded: now "), out)
	}
	g.Expect(lines[len(lines)-1]).To(gomega.Equal("trainingjob.muster.dev/piped condition met"))
	g.Expect(out).NotTo(gomega.Or(gomega.ContainSubstring("^["), gomega.ContainSubstring("^M"), gomega.ContainSubstring("⠋")))

	// The bytes themselves, without a terminal anywhere.
	cmd := exec.Command(muster(t), "wait", "raw", "-n", ns, "--for=condition=Succeeded", "--timeout=2m", "--kubeconfig", cluster.Kubeconfig())
	raw, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(gomega.HaveOccurred(), string(raw))
	noControlSequences(g, string(raw))
	g.Expect(string(raw)).To(gomega.HaveSuffix("trainingjob.muster.dev/raw condition met\n"))
}

// talker is a task that prints a numbered line every half second. Worker
// 1's first pod fails after two lines, so the task restarts.
const talker = `if [ "$MUSTER_TASK_INDEX" = 1 ] && [ "$MUSTER_TASK_ATTEMPT" = 1 ]; then
  echo "first try of $MUSTER_POD_NAME"; sleep 2; echo "giving up"; exit 1
fi
i=0
while true; do echo "tick $i"; i=$((i+1)); sleep 0.5; done`

// TestCLIMainVerbs drives a job through the main verbs on a terminal:
// create, logs -f in a second window (through a task's restart, a scale-up,
// a suspension and the job's deletion), get, describe, scale, suspend,
// resume, delete.
func TestCLIMainVerbs(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	dir := t.TempDir()
	term := newTerminal(t, dir)
	writeFile(t, dir, "talk.yaml", shellJob("talk", 2, "OnFailure", talker))
	start := time.Now()

	out, code := term.run(time.Minute, "muster create -n "+ns+" -f talk.yaml")
	g.Expect(code).To(gomega.BeZero(), out)
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("trainingjob.muster.dev/talk created"))

	// logs -f in a second window, from before the pods run.
	logs := term.newWindow("logs")
	term.start(logs, "muster logs talk -n "+ns+" -f")
	// Every pod's lines, prefixed with their task; worker 1's second pod
	// as worker-1#2, its lines interleaved with worker 0's.
	term.waitScreen(logs, 2*time.Minute, "worker-0 and worker-1#2 lines interleaved", func(s string) bool {
		return strings.Contains(s, "[worker-1] first try of talk-worker-1") &&
			strings.Contains(s, "[worker-1] giving up") &&
			interleaved(s, "[worker-0] tick ", "[worker-1#2] tick ")
	})

	// get: the restart counted, both tasks running.
	out = term.runUntil(time.Minute, "muster get -n "+ns, regexp.MustCompile(`(?m)^talk\s+Running\s+2/2\s+1\s+-\s+-\s+\d+s$`))
	g.Expect(out).To(gomega.MatchRegexp(`(?m)^NAME\s+PHASE\s+READY\s+RESTARTS\s+PROGRESS\s+ETA\s+AGE$`))

	// describe: the phase, the tasks, the failure.
	out, code = term.run(time.Minute, "muster describe talk -n "+ns)
	g.Expect(code).To(gomega.BeZero(), out)
	for _, re := range []string{
		`(?m)^Name:\s+talk$`, `(?m)^Namespace:\s+` + ns + `$`, `(?m)^Phase:\s+Running$`, `(?m)^Ready:\s+2/2$`,
		`(?m)^Restarts:\s+1\b`, `(?m)^Roles:$`, `(?m)^Tasks:$`, `(?m)^\s+worker\s+1\s+Running\s+talk-worker-1\s`,
		`(?m)^Recent failures:$`, `(?m)^\s+worker-1\s.*code 1`,
	} {
		g.Expect(out).To(gomega.MatchRegexp(re), "muster describe shows no %s", re)
	}

	// scale up: logs -f reads the new task.
	out, code = term.run(time.Minute, "muster scale talk -n "+ns+" --role worker --replicas 3")
	g.Expect(code).To(gomega.BeZero(), out)
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("trainingjob.muster.dev/talk role worker scaled to 3 (was 2)"))
	term.waitScreen(logs, 2*time.Minute, "worker-2's lines", func(s string) bool { return strings.Contains(s, "[worker-2] tick ") })
	term.runUntil(time.Minute, "muster get -n "+ns, regexp.MustCompile(`(?m)^talk\s+Running\s+3/3\s`))

	// suspend: the pods go, the job stays.
	out, code = term.run(time.Minute, "muster suspend talk -n "+ns)
	g.Expect(code).To(gomega.BeZero(), out)
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("trainingjob.muster.dev/talk suspended"))
	term.runUntil(time.Minute, "muster get -n "+ns, regexp.MustCompile(`(?m)^talk\s+Suspended\s+0/3\s`))
	g.Eventually(func() (int, error) {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(pods.Items), nil
	}, time.Minute, 250*time.Millisecond).Should(gomega.BeZero())

	// resume: new pods, which logs -f follows too; they count from 0 again.
	out, code = term.run(time.Minute, "muster resume talk -n "+ns)
	g.Expect(code).To(gomega.BeZero(), out)
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("trainingjob.muster.dev/talk resumed"))
	term.runUntil(2*time.Minute, "muster get -n "+ns, regexp.MustCompile(`(?m)^talk\s+Running\s+3/3\s`))
	term.waitScreen(logs, time.Minute, "the resumed tasks' first lines", func(s string) bool {
		return len(regexp.MustCompile(`(?m)^\[worker-0(#\d+)?\] tick 0$`).FindAllString(s, -1)) == 2 &&
			len(regexp.MustCompile(`(?m)^\[worker-2(#\d+)?\] tick 0$`).FindAllString(s, -1)) == 2
	})

	// delete: waits for the pods, and logs -f ends with the job.
	out, code = term.run(2*time.Minute, "muster delete talk -n "+ns)
	g.Expect(code).To(gomega.BeZero(), out)
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("trainingjob.muster.dev/talk deleted"))
	out, code = term.wait(logs, time.Minute)
	g.Expect(code).To(gomega.BeZero(), "muster logs -f after the job's deletion:\n%s", out)
	out, code = term.run(time.Minute, "muster get -n "+ns)
	g.Expect(code).To(gomega.BeZero(), out)
	g.Expect(strings.TrimSpace(out)).To(gomega.Equal("No training jobs found in namespace " + ns + "."))
	t.Logf("main verbs: %s", time.Since(start).Round(time.Second))
}

// interleaved is whether s has lines of both prefixes in turn: a, then b,
// then a again.
func interleaved(s, a, b string) bool {
	state := 0
	for _, l := range strings.Split(s, "\n") {
		switch {
		case state == 0 && strings.HasPrefix(l, a), state == 1 && strings.HasPrefix(l, b), state == 2 && strings.HasPrefix(l, a):
			state++
		}
		if state == 3 {
			return true
		}
	}
	return false
}

// runUntil runs a command on the terminal until its output matches want,
// and returns that output.
func (term *terminal) runUntil(timeout time.Duration, line string, want *regexp.Regexp) string {
	term.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, code := term.run(time.Minute, line)
		if code == 0 && want.MatchString(out) {
			return out
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("%s: no output matching %s within %s; the last (exit %d):\n%s", line, want, timeout, code, out)
		}
		time.Sleep(time.Second)
	}
}
