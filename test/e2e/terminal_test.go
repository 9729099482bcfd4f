package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// The CLI tests build muster from this checkout and drive it as a user
// does: typed into a shell in a real terminal (a tmux pane), and read off
// the screen (tmux capture-pane).

var (
	musterOnce sync.Once
	musterBin  string
	musterErr  error
)

// muster builds the muster command once per run and returns its path.
func muster(t *testing.T) string {
	t.Helper()
	musterOnce.Do(func() {
		dir, err := os.MkdirTemp("", "muster-e2e-cli-")
		if err != nil {
			musterErr = err
			return
		}
		musterBin = filepath.Join(dir, "muster")
		cmd := exec.Command("go", "build", "-o", musterBin, "./cmd/muster")
		cmd.Dir = cluster.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			musterErr = fmt.Errorf("building muster: %w\n%s", err, out)
		}
	})
	if musterErr != nil {
		t.Fatal(musterErr)
	}
	return musterBin
}

// terminal is a shell in a tmux pane of a tmux server of its own, with
// muster on PATH and KUBECONFIG set to the test cluster's.
type terminal struct {
	t      *testing.T
	socket string
	// shell is the command line of a pane's shell.
	shell []string
}

const (
	termWidth  = 160
	termHeight = 50
)

// newTerminal starts the shell in dir; the test's cleanup ends its server.
func newTerminal(t *testing.T, dir string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed: the CLI's terminal tests drive muster through it (make deps installs it): %v", err)
	}
	bin := muster(t)
	term := &terminal{t: t, socket: fmt.Sprintf("muster-e2e-%d-%04x", os.Getpid(), rand.IntN(1<<16))}
	// A plain shell: no user rc files, a short prompt, a known TERM.
	env := []string{
		"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
		"KUBECONFIG=" + cluster.Kubeconfig(),
		"PS1=$ ",
		"HOME=" + dir,
		// No history file: bash writes one into HOME when kill-server
		// hangs it up, racing the removal of the test's directory.
		"HISTFILE=",
	}
	// Enough scrollback for a whole test's logs.
	// The environment goes through env: tmux gives a pane the PATH of the
	// client that made it, whatever -e says.
	term.shell = append(append([]string{"env"}, env...), "bash", "--noprofile", "--norc")
	args := append([]string{"start-server", ";", "set-option", "-g", "history-limit", "100000", ";",
		"new-session", "-d", "-s", "main", "-x", fmt.Sprint(termWidth), "-y", fmt.Sprint(termHeight), "-c", dir}, term.shell...)
	if out, err := term.tmux(args...); err != nil {
		t.Fatalf("starting tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = term.tmux("kill-server") })
	return term
}

func (term *terminal) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", term.socket, "-f", "/dev/null"}, args...)...)
	// A UTF-8 terminal, as a user's is: tmux shows the spinner's frames
	// only then.
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// newWindow opens another window (a second shell, as in a second
// terminal tab) and returns its target.
func (term *terminal) newWindow(name string) string {
	term.t.Helper()
	if out, err := term.tmux(append([]string{"new-window", "-d", "-n", name}, term.shell...)...); err != nil {
		term.t.Fatalf("tmux new-window: %v\n%s", err, out)
	}
	return "main:" + name
}

// typeLine types a command line into the pane target and presses Enter.
func (term *terminal) typeLine(target, line string) {
	term.t.Helper()
	if out, err := term.tmux("send-keys", "-t", target, "-l", line); err != nil {
		term.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
	if out, err := term.tmux("send-keys", "-t", target, "Enter"); err != nil {
		term.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// screen is what the pane shows, with its scrollback, wrapped lines
// joined.
func (term *terminal) screen(target string) string {
	term.t.Helper()
	out, err := term.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", target)
	if err != nil {
		term.t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return out
}

// clear empties the pane and its scrollback.
func (term *terminal) clear(target string) {
	term.t.Helper()
	term.typeLine(target, "clear")
	if out, err := term.tmux("clear-history", "-t", target); err != nil {
		term.t.Fatalf("tmux clear-history: %v\n%s", err, out)
	}
	gomega.NewWithT(term.t).Eventually(func() string { return strings.TrimSpace(term.screen(target)) }, 10*time.Second, 100*time.Millisecond).
		Should(gomega.Equal("$"))
}

// run types a command in the main window, waits until it ends, and returns
// what it printed (the screen between its command line and the next
// prompt) and its exit code.
func (term *terminal) run(timeout time.Duration, line string) (string, int) {
	term.t.Helper()
	term.clear("main")
	term.start("main", line)
	return term.wait("main", timeout)
}

// start types a command line that also prints a sentinel with its exit
// code when it ends; wait waits for that.
func (term *terminal) start(target, line string) {
	term.t.Helper()
	term.typeLine(target, line+`; echo "<<exit $?>>"`)
}

var sentinel = regexp.MustCompile(`(?m)^<<exit (\d+)>>$`)

// wait waits for the command started last in target to end, and returns
// its output and exit code.
func (term *terminal) wait(target string, timeout time.Duration) (string, int) {
	term.t.Helper()
	var screen string
	deadline := time.Now().Add(timeout)
	for {
		screen = term.screen(target)
		if m := sentinel.FindStringSubmatchIndex(screen); m != nil {
			code := 0
			_, _ = fmt.Sscan(screen[m[2]:m[3]], &code)
			out := screen[:m[0]]
			// Drop the command line itself: the output starts after it.
			if i := strings.Index(out, `echo "<<exit $?>>"`+"\n"); i >= 0 {
				out = out[i+len(`echo "<<exit $?>>"`)+1:]
			}
			return out, code
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the command did not end within %s; the screen:\n%s", timeout, screen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitScreen waits until the pane shows what match accepts, and returns
// the screen.
func (term *terminal) waitScreen(target string, timeout time.Duration, what string, match func(string) bool) string {
	term.t.Helper()
	var screen string
	deadline := time.Now().Add(timeout)
	for {
		screen = term.screen(target)
		if match(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the screen did not show %s within %s; it shows:\n%s", what, timeout, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeFile writes a file for the shell to use, in dir.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shellJob is a TrainingJob of one role whose tasks run a shell script on
// the process node.
func shellJob(name string, replicas int, restartPolicy, script string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: muster.dev/v1beta1
kind: TrainingJob
metadata:
  name: %s
spec:
  roles:
  - name: worker
    replicas: %d
    restartPolicy: %s
    restartScope: Task
    template:
      spec:
        terminationGracePeriodSeconds: 2
        containers:
        - name: main
          image: %s
          command: [sh, -c]
          args:
          - |
`, name, replicas, restartPolicy, image)
	for _, l := range strings.Split(strings.TrimSpace(script), "\n") {
		b.WriteString("            " + l + "\n")
	}
	return b.String()
}

// noControlSequences fails when s holds an escape or a carriage return.
func noControlSequences(g gomega.Gomega, s string) {
	g.Expect(s).NotTo(gomega.ContainSubstring("\x1b"), "an escape sequence in %q", s)
	g.Expect(s).NotTo(gomega.ContainSubstring("\r"), "a carriage return in %q", s)
}
