package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type scaleResult struct {
	jobs, pods, replaced   int
	muster, floor, replace time.Duration
	cpu, peakRSS           float64
}

type torchResult struct {
	muster, floor torchTimes
}

type report struct {
	started time.Time
	scale   scaleResult
	torch   *torchResult
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.Seconds()/b.Seconds())
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// machine describes where the numbers come from.
func machine() string {
	var b strings.Builder
	cpu, _ := os.ReadFile("/proc/cpuinfo")
	model := "unknown"
	for _, line := range strings.Split(string(cpu), "\n") {
		if strings.HasPrefix(line, "model name") {
			model = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
			break
		}
	}
	mem, _ := os.ReadFile("/proc/meminfo")
	memLine := strings.SplitN(string(mem), "\n", 2)[0]
	torch, _ := exec.Command("/usr/bin/python3", "-c", "import torch; print(torch.__version__)").Output()
	fmt.Fprintf(&b, "- machine: %d cores (%s), %s\n", runtime.NumCPU(), model, strings.Join(strings.Fields(memLine), " "))
	fmt.Fprintf(&b, "- Go %s, Kubernetes v1.36.3 and etcd 3.6.16 built from source, torch %s (Debian)\n",
		runtime.Version(), strings.TrimSpace(string(torch)))
	return b.String()
}

func (r *report) write(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Muster benchmark report\n\n%s- run: %s, took %s\n\n", machine(),
		r.started.UTC().Format(time.RFC3339), time.Since(r.started).Round(time.Second))
	s := r.scale
	fmt.Fprintf(&b, "## The operator on KWOK nodes\n\n")
	fmt.Fprintf(&b, "%d TrainingJobs of %d pods (%d pods) created at once. The floor is a plain client creating the\n", s.jobs, s.pods/s.jobs, s.pods)
	fmt.Fprintf(&b, "same pods itself at the operator's pod-write rate (200 QPS, burst 400), with no operator.\n\n")
	fmt.Fprintf(&b, "| measurement | Muster | floor | ratio |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| create -> all pods Running | %s | %s | %s |\n", secs(s.muster), secs(s.floor), ratio(s.muster, s.floor))
	fmt.Fprintf(&b, "| one pod of each job deleted (%d) -> all replacements Running | %s | - | - |\n", s.replaced, secs(s.replace))
	fmt.Fprintf(&b, "| operator CPU over the above | %.1f s | - | - |\n", s.cpu)
	fmt.Fprintf(&b, "| operator peak memory (RSS) | %.0f MiB | - | - |\n\n", s.peakRSS)
	if t := r.torch; t != nil {
		fmt.Fprintf(&b, "## Real torch: recovery and rescale\n\n")
		fmt.Fprintf(&b, "examples/pytorch-elastic (torchrun, gloo, CPU, min 2 max 4) on the process node, against the same\n")
		fmt.Fprintf(&b, "script run as bare processes on this machine (a store process and torchrun agents with Muster's\n")
		fmt.Fprintf(&b, "settings): the floor torch itself imposes. Each time runs from the event to the first epoch the\n")
		fmt.Fprintf(&b, "new world finishes.\n\n")
		fmt.Fprintf(&b, "| measurement | Muster | floor | ratio |\n|---|---|---|---|\n")
		fmt.Fprintf(&b, "| worker lost (SIGKILL), 4 -> 3 | %s | %s | %s |\n", secs(t.muster.loss), secs(t.floor.loss), ratio(t.muster.loss, t.floor.loss))
		fmt.Fprintf(&b, "| scale-down request, 4 -> 3 | %s | %s | %s |\n", secs(t.muster.scaleDown), secs(t.floor.scaleDown), ratio(t.muster.scaleDown, t.floor.scaleDown))
		fmt.Fprintf(&b, "| scale-up request, 3 -> 4 | %s | %s | %s |\n\n", secs(t.muster.scaleUp), secs(t.floor.scaleUp), ratio(t.muster.scaleUp, t.floor.scaleUp))
		fmt.Fprintf(&b, "The floor's scale-down is SIGTERM to one agent and its scale-up is starting one more agent;\n")
		fmt.Fprintf(&b, "Muster's include the API write, the operator's reaction, and pod creation or deletion.\n")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "report.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	fmt.Fprintf(os.Stderr, "bench: report written to %s\n", path)
	return nil
}
