package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	// v1alpha1 is whether the CRD served v1alpha1 (-v1alpha1).
	v1alpha1 bool
	// operatorArgs are the flags added to the operator's (-operator-args).
	operatorArgs []string
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
	if r.v1alpha1 {
		b.WriteString("The CRD serves v1beta1 and, through the conversion webhook, v1alpha1, as config/production installs it.\n\n")
	} else {
		b.WriteString("The CRD serves v1beta1 alone, as the chart installs it (-v1alpha1=false).\n\n")
	}
	if len(r.operatorArgs) > 0 {
		fmt.Fprintf(&b, "The operator ran with `%s` beside its defaults (-operator-args).\n\n", strings.Join(r.operatorArgs, " "))
	}
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

// stat is a measurement over a side's runs: their median (of an even
// number, the lower of the middle two), min and max.
type stat struct {
	med, lo, hi float64
	n           int
}

func statOf(runs []*side, of func(*side) float64) stat {
	if len(runs) == 0 {
		return stat{}
	}
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = of(r)
	}
	slices.Sort(v)
	return stat{med: v[(len(v)-1)/2], lo: v[0], hi: v[len(v)-1], n: len(v)}
}

// cell is the median, then min and max when there are several runs.
func (s stat) cell(format func(float64) string) string {
	if s.n == 0 {
		return "-"
	}
	if s.n == 1 || s.lo == s.hi {
		return format(s.med)
	}
	return format(s.med) + " (" + format(s.lo) + "-" + format(s.hi) + ")"
}

func fSecs(v float64) string        { return strconv.FormatFloat(v, 'f', 2, 64) + " s" }
func fMsec(v float64) string        { return strconv.FormatFloat(v*1000, 'f', 0, 64) + " ms" }
func fOne(v float64) string         { return strconv.FormatFloat(v, 'f', 1, 64) }
func fTwo(v float64) string         { return strconv.FormatFloat(v, 'f', 2, 64) }
func fMiB(v float64) string         { return strconv.FormatFloat(v, 'f', 0, 64) + " MiB" }
func fCPU(v float64) string         { return strconv.FormatFloat(v, 'f', 1, 64) + " s" }
func durOf(d time.Duration) float64 { return d.Seconds() }

// sideNames say what each side is, for the report.
var sideNames = map[sideKind]string{
	sideMuster:     "Muster",
	sideF0:         "F0 pods",
	sideF1:         "F1 object",
	sideF1s:        "F1s Muster's schema",
	sideF1n:        "F1n a name per attempt",
	sideF2:         "F2 Job",
	sideF2Upstream: "F2 Job, upstream rates",
}

// writeScenarios writes one table per scenario: each side's median over
// its runs (min-max), and Muster's ratio to each floor's median.
func (r *report) writeScenarios(b *strings.Builder) {
	if len(r.scenarios) == 0 {
		return
	}
	fmt.Fprintf(b, "## The operator on KWOK nodes\n\n")
	fmt.Fprintf(b, "Each scenario creates its jobs at once through Muster and through each of its floors, every side in\n")
	fmt.Fprintf(b, "its own namespace, deleted and gone before the next side starts; each run starts with the next\n")
	fmt.Fprintf(b, "side. Cells are the median of the runs, with min-max; ratios are Muster's median over the floor's.\n")
	fmt.Fprintf(b, "The floors' clients are processes of their own (CPU counted as \"floor client\"), under a\n")
	fmt.Fprintf(b, "ServiceAccount in the operator's priority level, protobuf for built-in kinds, %d creators at QPS %d\n", floorCreators, floorQPS)
	fmt.Fprintf(b, "(burst %d). F0: each job's headless Service and its pods. F1: F0 plus one object of a minimal CRD\n", floorBurst)
	fmt.Fprintf(b, "per job, made first, owning the pods (which it holds with a finalizer) and written twice (created,\n")
	fmt.Fprintf(b, "all running); a lost pod's finalizer is released and the status written side by side, then the\n")
	fmt.Fprintf(b, "pod made again under its name. F1s: F1 with Muster's v1beta1 schema and CEL rules under another\n")
	fmt.Fprintf(b, "group. F1n: F1 with a new pod name for each attempt of a task (its hostname kept), the\n")
	fmt.Fprintf(b, "replacement made as soon as its predecessor is seen going, beside the release and the status write.\n")
	fmt.Fprintf(b, "F2: one Indexed Job (podReplacementPolicy Failed) and headless Service per job, pods made by\n")
	fmt.Fprintf(b, "kube-controller-manager at the operator's rates (QPS %d, burst %d); \"upstream rates\" once more at\n", operatorQPS, operatorBurst)
	fmt.Fprintf(b, "its defaults (20, 30). A lost pod is deleted with grace 0; a Job's is then reported Failed, as its\n")
	fmt.Fprintf(b, "kubelet would (the Job controller replaces only failed pods). Times come from a watch on the pods\n")
	fmt.Fprintf(b, "from the moment all the jobs are asked for; API requests from `apiserver_request_total` (every\n")
	fmt.Fprintf(b, "client's, until the writes settle, less lease renewals); CPU from /proc. Before anything is\n")
	fmt.Fprintf(b, "measured, Muster's and F0's sides of the first scenario run once unmeasured: the API server sizes\n")
	fmt.Fprintf(b, "a watch's buffer when the watch starts.\n\n")
	if r.floorPods == floorPodsSame {
		fmt.Fprintf(b, "The floors' pods (F0, F1, F1s, F1n) are Muster's: the role's template with the environment, labels and\n")
		fmt.Fprintf(b, "annotation Muster adds (each task's identity), without Muster's owner reference and finalizer.\n\n")
	} else {
		fmt.Fprintf(b, "**The floors' pods hold the role's template alone** (`-floor-pods template`).\n\n")
	}
	for _, s := range r.scenarios {
		writeScenario(b, s)
	}
	fmt.Fprintf(b, "Operator peak memory (RSS), the highest of the scenarios' runs: %.0f MiB. A run's own peak starts from what the\n", r.peakRSS)
	fmt.Fprintf(b, "operator still held when it began: the Go runtime returns freed memory to the system only gradually.\n\n")
}

// row is one measurement of a scenario's table.
type row struct {
	what   string
	of     func(*side) float64
	format func(float64) string
	// musterOnly rows have no floor cells or ratios, noRatio rows no
	// ratios.
	musterOnly, noRatio bool
}

func writeScenario(b *strings.Builder, s *scenario) {
	kinds := append(slices.Clone(s.kinds), s.once...)
	floors := s.kinds[1:]
	fmt.Fprintf(b, "### %s: %d jobs x %d pods, %d runs (load average after: %s)\n\n", s.name, s.jobs, s.perJob, s.runs, s.load)
	fmt.Fprintf(b, "| measurement |")
	for _, k := range kinds {
		fmt.Fprintf(b, " %s |", sideNames[k])
	}
	for _, f := range floors {
		fmt.Fprintf(b, " Muster / %s |", f)
	}
	fmt.Fprintf(b, "\n|---|%s%s\n", strings.Repeat("---|", len(kinds)), strings.Repeat("---|", len(floors)))
	perJob := func(v float64) float64 { return v / float64(s.jobs) }
	rows := []row{
		{what: "create -> all pods created", of: func(d *side) float64 { return durOf(d.created) }, format: fSecs},
		{what: "create -> all pods bound to a node", of: func(d *side) float64 { return durOf(d.bound) }, format: fSecs},
		{what: "create -> all pods Running", of: func(d *side) float64 { return durOf(d.all) }, format: fSecs},
	}
	if s.jobs > 1 {
		for _, q := range []float64{0.5, 0.99} {
			rows = append(rows, row{what: fmt.Sprintf("per job, all asked for -> all its pods Running, p%.0f", q*100),
				of: func(d *side) float64 { return durOf(quantile(d.perJob, q)) }, format: fSecs})
		}
	}
	rows = append(rows,
		row{what: "API writes per job, all clients", of: func(d *side) float64 { return perJob(d.reqs.writes()) }, format: fOne},
		row{what: "write requests refused per job (throttled, invalid, in conflict)", of: func(d *side) float64 { return perJob(d.reqs.refusedWrites()) }, format: fOne},
	)
	for _, name := range measured {
		// Only one side runs the operator, only the floors a client of
		// their own: the row after them compares the two.
		own := name == operatorName || name == floorClientName
		rows = append(rows, row{what: name + " CPU", of: func(d *side) float64 { return d.cpu[name] }, format: fCPU, noRatio: own})
	}
	rows = append(rows, row{what: "the side's own client CPU (the operator, or the floor's client)", of: func(d *side) float64 {
		return d.cpu[operatorName] + d.cpu[floorClientName]
	}, format: fCPU})
	rows = append(rows,
		row{what: "CPU of all of the above", of: func(d *side) float64 {
			var all float64
			for _, name := range measured {
				all += d.cpu[name]
			}
			return all
		}, format: fCPU},
		row{what: "watches the API server closed because their client fell behind", of: func(d *side) float64 {
			var n float64
			for _, v := range d.terminated {
				n += v
			}
			return n
		}, format: func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }},
		row{what: "operator CPU per job", of: func(d *side) float64 { return 1000 * perJob(d.cpu[operatorName]) }, format: func(v float64) string { return fOne(v) + " ms" }, musterOnly: true},
		row{what: "operator: reconciles per job", of: func(d *side) float64 { return perJob(d.ops.reconciles()) }, format: fTwo, musterOnly: true},
		row{what: "operator: job status writes per job", of: func(d *side) float64 { return perJob(d.ops[`muster_status_writes_total{result="ok"}`]) }, format: fTwo, musterOnly: true},
		row{what: "operator: job status writes in conflict per job", of: func(d *side) float64 { return perJob(d.ops[`muster_status_writes_total{result="conflict"}`]) }, format: fTwo, musterOnly: true},
		row{what: "operator: reconciles that waited for the cache to show its own writes, per job", of: func(d *side) float64 { return perJob(d.ops[`muster_expectation_waits_total`]) }, format: fTwo, musterOnly: true},
	)
	if s.replace > 0 {
		n := float64(s.replace)
		rows = append(rows,
			row{what: fmt.Sprintf("%d pods deleted -> replacement Running, p50", s.replace), of: func(d *side) float64 { return durOf(quantile(d.replaced, 0.5)) }, format: fMsec},
			row{what: fmt.Sprintf("%d pods deleted -> replacement Running, p99", s.replace), of: func(d *side) float64 { return durOf(quantile(d.replaced, 0.99)) }, format: fMsec},
			row{what: "of which delete -> replacement made, p99", of: func(d *side) float64 { return durOf(quantile(d.replacedMade, 0.99)) }, format: fMsec},
			row{what: "API writes per replaced pod, all clients, the deletes included", of: func(d *side) float64 { return d.replacedReqs.writes() / n }, format: fTwo},
		)
	}
	if s.replaceOne > 0 {
		n := float64(s.replaceOne)
		rows = append(rows,
			row{what: fmt.Sprintf("%d pods deleted one at a time -> replacement Running, p50", s.replaceOne), of: func(d *side) float64 { return durOf(quantile(d.replacedOne, 0.5)) }, format: fMsec},
			row{what: fmt.Sprintf("%d pods deleted one at a time -> replacement Running, max", s.replaceOne), of: func(d *side) float64 { return durOf(quantile(d.replacedOne, 1)) }, format: fMsec},
			row{what: "API writes per pod replaced one at a time, all clients, the delete included", of: func(d *side) float64 { return d.replacedOneReqs.writes() / n }, format: fTwo},
		)
	}
	rows = append(rows, restartRows(s)...)
	rows = append(rows, row{what: "operator peak RSS", of: func(d *side) float64 { return d.peakRSS }, format: fMiB, musterOnly: true})
	for _, rw := range rows {
		writeRow(b, s, kinds, floors, rw)
	}
	fmt.Fprintf(b, "| largest TrainingJob object | %.1f KiB |%s%s\n\n", float64(s.jobBytes)/1024,
		strings.Repeat(" - |", len(kinds)-1), strings.Repeat(" - |", len(floors)))
	if ms := s.sides[sideMuster]; len(ms) > 0 && s.replace > 0 {
		all := counters{}
		for _, m := range ms {
			for k, v := range m.replacing {
				all[k] += v
			}
		}
		fmt.Fprintf(b, "Where the operator's time went while replacing, mean over every run (99th percentile, from the histograms' buckets): job waiting in its queue %s, reconcile %s, status write %s, pod write's wait for a slot %s, pod create %s, pod release %s.\n\n",
			all.meanCell("workqueue_queue_duration_seconds", `name="trainingjob"`),
			all.meanCell("controller_runtime_reconcile_time_seconds", `controller="trainingjob"`),
			all.meanCell("muster_status_write_duration_seconds"),
			all.meanCell("muster_pod_write_wait_seconds"),
			all.meanCell("muster_pod_write_duration_seconds", `action="create"`),
			all.meanCell("muster_pod_write_duration_seconds", `action="release"`))
	}
	writeRequestKinds(b, s, kinds, "Writes by verb and resource (all clients), median of the runs", func(r requests) []string { return r.writeKinds() },
		func(d *side) requests { return d.reqs })
	if s.replace > 0 {
		writeRequestKinds(b, s, kinds, fmt.Sprintf("Writes by verb and resource while %d pods were replaced at once (all clients), median of the runs", s.replace),
			func(r requests) []string { return r.writeKinds() }, func(d *side) requests { return d.replacedReqs })
	}
	writeRestartWrites(b, s)
	writeRequestKinds(b, s, kinds, "Reads by verb and resource (all clients, the bench's own watch and scrapes included), median of the runs",
		func(r requests) []string { return r.readKinds() }, func(d *side) requests { return d.reqs })
}

func writeRow(b *strings.Builder, s *scenario, kinds, floors []sideKind, rw row) {
	fmt.Fprintf(b, "| %s |", rw.what)
	m := statOf(s.sides[sideMuster], rw.of)
	for _, k := range kinds {
		if rw.musterOnly && k != sideMuster {
			fmt.Fprintf(b, " - |")
			continue
		}
		fmt.Fprintf(b, " %s |", statOf(s.sides[k], rw.of).cell(rw.format))
	}
	for _, f := range floors {
		if rw.musterOnly || rw.noRatio {
			fmt.Fprintf(b, " - |")
			continue
		}
		fmt.Fprintf(b, " %s |", ratioF(m.med, statOf(s.sides[f], rw.of).med))
	}
	fmt.Fprintln(b)
}

// writeRequestKinds writes the median count of each kind of request pick
// finds, on each side.
func writeRequestKinds(b *strings.Builder, s *scenario, kinds []sideKind, title string, pick func(requests) []string, of func(*side) requests) {
	var keys []string
	for _, k := range kinds {
		for _, d := range s.sides[k] {
			keys = union(keys, pick(of(d)))
		}
	}
	if len(keys) == 0 {
		return
	}
	fmt.Fprintf(b, "%s:\n\n| request |", title)
	for _, k := range kinds {
		fmt.Fprintf(b, " %s |", sideNames[k])
	}
	fmt.Fprintf(b, "\n|---|%s\n", strings.Repeat("---|", len(kinds)))
	for _, key := range keys {
		fmt.Fprintf(b, "| %s |", key)
		for _, k := range kinds {
			fmt.Fprintf(b, " %.0f |", statOf(s.sides[k], func(d *side) float64 { return of(d)[key] }).med)
		}
		fmt.Fprintln(b)
	}
	fmt.Fprintln(b)
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

// restartRows are the rows of an operator restart (-operator-restart),
// where the scenario has one.
func restartRows(s *scenario) []row {
	if !s.restartOperator {
		return nil
	}
	restarted := func(of func(*operatorRestart) float64) func(*side) float64 {
		return func(d *side) float64 {
			if d.restarted == nil {
				return 0
			}
			return of(d.restarted)
		}
	}
	return []row{
		{what: "operator restarted (SIGTERM, every pod running) -> its next instance leads", of: restarted(func(r *operatorRestart) float64 { return durOf(r.leading) }), format: fSecs, musterOnly: true},
		{what: "operator restarted -> every job reconciled", of: restarted(func(r *operatorRestart) float64 { return durOf(r.reconciled) }), format: fSecs, musterOnly: true},
		{what: "API writes while the operator restarted, all clients", of: restarted(func(r *operatorRestart) float64 { return r.reqs.writes() }), format: fOne, musterOnly: true},
		{what: "job status writes by the operator's next instance", of: restarted(func(r *operatorRestart) float64 { return r.statusWrites }), format: fOne, musterOnly: true},
	}
}

// writeRestartWrites lists the writes of an operator restart by kind.
func writeRestartWrites(b *strings.Builder, s *scenario) {
	if !s.restartOperator {
		return
	}
	writeRequestKinds(b, s, []sideKind{sideMuster}, "Writes by verb and resource while the operator restarted (all clients), median of the runs",
		func(r requests) []string { return r.writeKinds() }, func(d *side) requests {
			if d.restarted == nil {
				return nil
			}
			return d.restarted.reqs
		})
}
