package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// torchResult are each run's times, Muster's and the floor's.
type torchResult struct {
	muster, floor []torchTimes
}

// medianOf is the median of one of the runs' times, and all of them as
// "18.5 s (17.8, 19.2, 18.5)" when there is more than one (of an even
// number, the lower of the middle two).
func medianOf(runs []torchTimes, of func(torchTimes) time.Duration) (time.Duration, string) {
	all := make([]time.Duration, len(runs))
	each := make([]string, len(runs))
	for i, r := range runs {
		all[i] = of(r)
		each[i] = strconv.FormatFloat(all[i].Seconds(), 'f', 1, 64)
	}
	sortDurations(all)
	m := quantile(all, 0.5)
	if len(runs) == 1 {
		return m, secs(m)
	}
	return m, secs(m) + " (" + strings.Join(each, ", ") + ")"
}

type report struct {
	started   time.Time
	scenarios []*scenario
	restarts  []*restartScenario
	peakRSS   float64
	torch     *torchResult
	// floorPods is what the floor's pods held (-floor-pods).
	floorPods string
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
	r.writeScenarios(&b)
	r.writeRestarts(&b)
	if t := r.torch; t != nil {
		fmt.Fprintf(&b, "## Real torch: recovery and rescale\n\n")
		fmt.Fprintf(&b, "examples/pytorch-elastic (torchrun, gloo, CPU, min 2 max 4) on the process node, against the same\n")
		fmt.Fprintf(&b, "script run as bare processes on this machine (a store process and torchrun agents with Muster's\n")
		fmt.Fprintf(&b, "settings): the floor torch itself imposes. Each time runs from the event to the first epoch the\n")
		fmt.Fprintf(&b, "new world finishes; with more than one run (-torch-runs, Muster's and the floor's in turn), the\n")
		fmt.Fprintf(&b, "median, each run's time in brackets, and the ratio of the medians.\n\n")
		fmt.Fprintf(&b, "| measurement | Muster | floor | ratio |\n|---|---|---|---|\n")
		for _, row := range []struct {
			what string
			of   func(torchTimes) time.Duration
		}{
			{"worker lost (SIGKILL), 4 -> 3", func(t torchTimes) time.Duration { return t.loss }},
			{"scale-down request, 4 -> 3", func(t torchTimes) time.Duration { return t.scaleDown }},
			{"scale-up request, 3 -> 4", func(t torchTimes) time.Duration { return t.scaleUp }},
			{"worker process lost (SIGKILL), the four restart: Muster in place, floor torchrun --max-restarts", func(t torchTimes) time.Duration { return t.inPlace }},
		} {
			m, mCell := medianOf(t.muster, row.of)
			f, fCell := medianOf(t.floor, row.of)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.what, mCell, fCell, ratio(m, f))
		}
		fmt.Fprintln(&b)
		fmt.Fprintf(&b, "The floor's scale-down is SIGTERM to one agent and its scale-up is starting one more agent;\n")
		fmt.Fprintf(&b, "Muster's include the API write, the operator's reaction, and pod creation or deletion.\n")
		fmt.Fprintf(&b, "In the last row one worker process is killed, its agent and pod left alive: Muster's job sets\n")
		fmt.Fprintf(&b, "restartMode InPlace, restartScope Job and maxRestarts 0, so torchrun gives up and Muster restarts\n")
		fmt.Fprintf(&b, "every pod of the gang in place; the floor's agents restart their workers themselves.\n")
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

func ms(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func msec(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

func ratioF(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// writeScenarios writes one table per scenario, each row Muster against
// the floor measured in the same run.
func (r *report) writeScenarios(b *strings.Builder) {
	if len(r.scenarios) == 0 {
		return
	}
	fmt.Fprintf(b, "## The operator on KWOK nodes\n\n")
	fmt.Fprintf(b, "Each scenario creates its jobs at once through Muster, then the same pods with a plain client-go\n")
	fmt.Fprintf(b, "program, the floor: %d parallel creators at QPS %d (burst %d), one headless Service per job, pods\n", floorCreators, floorQPS, floorBurst)
	fmt.Fprintf(b, "placed by the default scheduler on KWOK nodes. Times come from a watch on the pods (first seen,\n")
	fmt.Fprintf(b, "first seen on a node, first seen Running), from the moment all the jobs are asked for, on both\n")
	fmt.Fprintf(b, "sides: a job waits for its creator as much as for the cluster. API requests from kube-apiserver's `apiserver_request_total`, counted until the writes\n")
	fmt.Fprintf(b, "settle (every client's: the scheduler's bindings, KWOK's status updates, the endpoint controllers';\n")
	fmt.Fprintf(b, "not the components' lease renewals, which go on regardless); writes are the accepted ones, and the\n")
	fmt.Fprintf(b, "requests the API server refused (throttled, invalid, in conflict) are counted apart: they change\n")
	fmt.Fprintf(b, "nothing; under load most are KWOK starting a pod it has already started (422: a second pod IP);\n")
	fmt.Fprintf(b, "CPU from /proc, of each control-plane component, KWOK (which stands in for the nodes' kubelets)\n")
	fmt.Fprintf(b, "and the operator. A replacement is one pod of each of the first jobs deleted with grace 0; the floor\n")
	fmt.Fprintf(b, "recreates a pod as soon as its watch sees it gone. Then another pod of each of the first jobs is\n")
	fmt.Fprintf(b, "deleted, one at a time, each once the one before runs again and the writes settle: a single failure,\n")
	fmt.Fprintf(b, "which nothing batches with another. Before anything is measured, both sides of the first\n")
	fmt.Fprintf(b, "scenario run once unmeasured: the API server sizes a watch's buffer when the watch starts, and the\n")
	fmt.Fprintf(b, "watches opened on a fresh cluster would otherwise fall behind in the first side measured alone.\n\n")
	if r.floorPods == floorPodsSame {
		fmt.Fprintf(b, "The floor's pods are Muster's: the role's template with the environment, labels and annotation\n")
		fmt.Fprintf(b, "Muster adds (each task's identity), less the owner reference and tracking finalizer only the\n")
		fmt.Fprintf(b, "operator needs.\n\n")
	} else {
		fmt.Fprintf(b, "**The floor's pods hold the role's template alone** (`-floor-pods template`): none of the\n")
		fmt.Fprintf(b, "environment, labels and annotation Muster adds, so the ratios include what those cost the cluster.\n\n")
	}
	for _, s := range r.scenarios {
		m, f := s.muster, s.floor
		fmt.Fprintf(b, "### %s: %d jobs x %d pods (load average after: %s)\n\n", s.name, s.jobs, s.perJob, s.load)
		fmt.Fprintf(b, "| measurement | Muster | floor | ratio |\n|---|---|---|---|\n")
		fmt.Fprintf(b, "| create -> all pods created | %s | %s | %s |\n", ms(m.created), ms(f.created), ratio(m.created, f.created))
		fmt.Fprintf(b, "| create -> all pods bound to a node | %s | %s | %s |\n", ms(m.bound), ms(f.bound), ratio(m.bound, f.bound))
		fmt.Fprintf(b, "| create -> all pods Running | %s | %s | %s |\n", ms(m.all), ms(f.all), ratio(m.all, f.all))
		if s.jobs > 1 {
			for _, q := range []float64{0.5, 0.99} {
				mq, fq := quantile(m.perJob, q), quantile(f.perJob, q)
				fmt.Fprintf(b, "| per job, all asked for -> all its pods Running, p%.0f | %s | %s | %s |\n", q*100, ms(mq), ms(fq), ratio(mq, fq))
			}
		}
		mw, fw := m.reqs.writes()/float64(s.jobs), f.reqs.writes()/float64(s.jobs)
		fmt.Fprintf(b, "| API writes per job, all clients | %.1f | %.1f | %s |\n", mw, fw, ratioF(mw, fw))
		mr, fr := m.reqs.refusedWrites()/float64(s.jobs), f.reqs.refusedWrites()/float64(s.jobs)
		fmt.Fprintf(b, "| write requests refused per job (throttled, invalid, in conflict) | %.1f | %.1f | - |\n", mr, fr)
		var mAll, fAll float64
		for _, name := range measured {
			mAll, fAll = mAll+m.cpu[name], fAll+f.cpu[name]
			if name == operatorName {
				fmt.Fprintf(b, "| operator CPU | %.1f s (%.1f ms per job) | - | - |\n", m.cpu[name], 1000*m.cpu[name]/float64(s.jobs))
				continue
			}
			fmt.Fprintf(b, "| %s CPU | %.1f s | %.1f s | %s |\n", name, m.cpu[name], f.cpu[name], ratioF(m.cpu[name], f.cpu[name]))
		}
		fmt.Fprintf(b, "| CPU of all of the above | %.1f s | %.1f s | %s |\n", mAll, fAll, ratioF(mAll, fAll))
		fmt.Fprintf(b, "| watches the API server closed because their client fell behind | %s | %s | - |\n", m.terminated, f.terminated)
		perJob := func(v float64) string { return strconv.FormatFloat(v/float64(s.jobs), 'f', 2, 64) }
		fmt.Fprintf(b, "| operator: reconciles per job | %s | - | - |\n", perJob(m.ops.reconciles()))
		fmt.Fprintf(b, "| operator: job status writes per job (in conflict; left for a later write) | %s (%s; %s) | - | - |\n",
			perJob(m.ops[`muster_status_writes_total{result="ok"}`]), perJob(m.ops[`muster_status_writes_total{result="conflict"}`]),
			perJob(m.ops[`muster_status_writes_deferred_total`]))
		fmt.Fprintf(b, "| operator: reconciles that waited for the cache to show its own writes, per job | %s | - | - |\n",
			perJob(m.ops[`muster_expectation_waits_total`]))
		type replacementRow struct {
			what string
			m, f []time.Duration
		}
		replacementRows := func(rows []replacementRow, qs ...float64) {
			for _, row := range rows {
				for _, q := range qs {
					mq, fq := quantile(row.m, q), quantile(row.f, q)
					label := fmt.Sprintf("p%.0f", q*100)
					if q == 1 {
						label = "max"
					}
					fmt.Fprintf(b, "| %s, %s | %s | %s | %s |\n", row.what, label, msec(mq), msec(fq), ratio(mq, fq))
				}
			}
		}
		if len(m.replaced) > 0 {
			replacementRows([]replacementRow{
				{fmt.Sprintf("%d pods deleted -> replacement Running", len(m.replaced)), m.replaced, f.replaced},
				{"of which delete -> replacement made", m.replacedMade, f.replacedMade},
			}, 0.5, 0.99)
			t := m.replacing
			fmt.Fprintf(b, "| operator while replacing, mean: job waiting in its queue / reconcile / status write / pod write's wait for a slot / pod create / pod release | %s | - | - |\n",
				strings.Join([]string{
					t.meanCell("workqueue_queue_duration_seconds", `name="trainingjob"`),
					t.meanCell("controller_runtime_reconcile_time_seconds", `controller="trainingjob"`),
					t.meanCell("muster_status_write_duration_seconds"),
					t.meanCell("muster_pod_write_wait_seconds"),
					t.meanCell("muster_pod_write_duration_seconds", `action="create"`),
					t.meanCell("muster_pod_write_duration_seconds", `action="release"`),
				}, " / "))
		}
		if len(m.replacedOne) > 0 {
			replacementRows([]replacementRow{
				{fmt.Sprintf("%d pods deleted one at a time -> replacement Running", len(m.replacedOne)), m.replacedOne, f.replacedOne},
				{"of which delete -> replacement made", m.replacedOneMade, f.replacedOneMade},
			}, 0.5, 1)
		}
		fmt.Fprintf(b, "| largest TrainingJob object | %.1f KiB | - | - |\n", float64(s.jobBytes)/1024)
		fmt.Fprintf(b, "| operator peak RSS in this scenario | %.0f MiB | - | - |\n\n", m.peakRSS)
		fmt.Fprintf(b, "Writes by verb and resource (all clients):\n\n| request | Muster | floor |\n|---|---|---|\n")
		for _, k := range union(m.reqs.writeKinds(), f.reqs.writeKinds()) {
			fmt.Fprintf(b, "| %s | %.0f | %.0f |\n", k, m.reqs[k], f.reqs[k])
		}
		fmt.Fprintf(b, "\nReads by verb and resource (all clients, the bench's own watch and scrapes included):\n\n| request | Muster | floor |\n|---|---|---|\n")
		for _, k := range union(m.reqs.readKinds(), f.reqs.readKinds()) {
			fmt.Fprintf(b, "| %s | %.0f | %.0f |\n", k, m.reqs[k], f.reqs[k])
		}
		fmt.Fprintln(b)
	}
	fmt.Fprintf(b, "Operator peak memory (RSS), the highest of the scenarios': %.0f MiB. A scenario's own peak starts from what the\n", r.peakRSS)
	fmt.Fprintf(b, "operator still held when it began: the Go runtime returns freed memory to the system only gradually.\n\n")
}

// writeRestarts writes one table per gang restart: Muster in place, Muster
// re-creating the pods, and the plain client re-creating them, measured in
// the same run.
func (r *report) writeRestarts(b *strings.Builder) {
	if len(r.restarts) == 0 {
		return
	}
	fmt.Fprintf(b, "## A gang restarted whole on KWOK nodes\n\n")
	fmt.Fprintf(b, "One job of N pods whose every member restarts when one fails (restartPolicy OnFailure, restartScope\n")
	fmt.Fprintf(b, "Job, as a static PyTorch job's). Once its pods run and the writes settle, one member fails, as its\n")
	fmt.Fprintf(b, "node reports it: in place, its training container exits 1 and is restarted alone by its restart rule;\n")
	fmt.Fprintf(b, "re-created, its pod ends Failed. Timed from that status write to every member seen Running the next\n")
	fmt.Fprintf(b, "attempt (a new pod, or the same pod after the node restarted all its containers: the KWOK stage\n")
	fmt.Fprintf(b, "pod-restart-in-place plays the kubelet's part). The plain client makes the same pods and Service;\n")
	fmt.Fprintf(b, "when its watch sees a pod failed, its %d creators delete every pod (grace 0) and make each again as\n", floorCreators)
	fmt.Fprintf(b, "soon as it is gone. Requests and CPU are counted from the failure until the writes settle.\n\n")
	for _, s := range r.restarts {
		in, re, fl := s.inPlace, s.recreate, s.floor
		fmt.Fprintf(b, "### restart: one gang of %d pods (load average after: %s)\n\n", s.pods, s.load)
		fmt.Fprintf(b, "| measurement | in place | re-created | plain client | in place / re-created | in place / plain client |\n|---|---|---|---|---|---|\n")
		fmt.Fprintf(b, "| one member fails -> every member Running the next attempt | %s | %s | %s | %s | %s |\n",
			ms(in.took), ms(re.took), ms(fl.took), ratio(in.took, re.took), ratio(in.took, fl.took))
		fmt.Fprintf(b, "| of which one member fails -> every member asked (made for it, or asked to restart in place) | %s | %s | %s | %s | %s |\n",
			ms(in.asked), ms(re.asked), ms(fl.asked), ratio(in.asked, re.asked), ratio(in.asked, fl.asked))
		fmt.Fprintf(b, "| of which one member fails -> first member asked | %s | %s | %s | %s | %s |\n",
			ms(in.firstAsked), ms(re.firstAsked), ms(fl.firstAsked), ratio(in.firstAsked, re.firstAsked), ratio(in.firstAsked, fl.firstAsked))
		iw, rw, fw := in.reqs.writes(), re.reqs.writes(), fl.reqs.writes()
		fmt.Fprintf(b, "| API writes, all clients | %.0f | %.0f | %.0f | %s | %s |\n", iw, rw, fw, ratioF(iw, rw), ratioF(iw, fw))
		perPod := func(v float64) string { return strconv.FormatFloat(v/float64(s.pods), 'f', 2, 64) }
		fmt.Fprintf(b, "| API writes per pod | %s | %s | %s | - | - |\n", perPod(iw), perPod(rw), perPod(fw))
		var iAll, rAll, fAll float64
		for _, name := range measured {
			iAll, rAll, fAll = iAll+in.cpu[name], rAll+re.cpu[name], fAll+fl.cpu[name]
			fmt.Fprintf(b, "| %s CPU | %.1f s | %.1f s | %.1f s | %s | %s |\n", name, in.cpu[name], re.cpu[name], fl.cpu[name],
				ratioF(in.cpu[name], re.cpu[name]), ratioF(in.cpu[name], fl.cpu[name]))
		}
		fmt.Fprintf(b, "| CPU of all of the above | %.1f s | %.1f s | %.1f s | %s | %s |\n", iAll, rAll, fAll, ratioF(iAll, rAll), ratioF(iAll, fAll))
		fmt.Fprintf(b, "| operator: reconciles / job status writes | %.0f / %.0f | %.0f / %.0f | - | - | - |\n",
			in.ops.reconciles(), in.ops[`muster_status_writes_total{result="ok"}`],
			re.ops.reconciles(), re.ops[`muster_status_writes_total{result="ok"}`])
		fmt.Fprintf(b, "| operator while restarting, mean: job waiting in its queue / reconcile / status write / pod write's wait for a slot / pod restart in place / pod create / pod delete | %s | %s | - | - | - |\n",
			restartTimings(in.ops), restartTimings(re.ops))
		fmt.Fprintf(b, "| attempt history: pods restarted in place / re-created | %d / %d | - | - | - | - |\n\n",
			in.podRestarts.InPlace, in.podRestarts.Recreated)
		fmt.Fprintf(b, "Writes by verb and resource (all clients):\n\n| request | in place | re-created | plain client |\n|---|---|---|---|\n")
		for _, k := range union(union(in.reqs.writeKinds(), re.reqs.writeKinds()), fl.reqs.writeKinds()) {
			fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f |\n", k, in.reqs[k], re.reqs[k], fl.reqs[k])
		}
		fmt.Fprintln(b)
	}
}

// restartTimings are the operator's mean times while it restarted a gang.
func restartTimings(t counters) string {
	return strings.Join([]string{
		t.meanCell("workqueue_queue_duration_seconds", `name="trainingjob"`),
		t.meanCell("controller_runtime_reconcile_time_seconds", `controller="trainingjob"`),
		t.meanCell("muster_status_write_duration_seconds"),
		t.meanCell("muster_pod_write_wait_seconds"),
		t.meanCell("muster_pod_write_duration_seconds", `action="restart"`),
		t.meanCell("muster_pod_write_duration_seconds", `action="create"`),
		t.meanCell("muster_pod_write_duration_seconds", `action="delete"`),
	}, " / ")
}
