// Command bench measures Muster on the local cluster and writes a report
// with every number next to its floor: the same work done by the fastest
// plain client, measured in the same run. Run it with `make bench` (it
// needs root, like the cluster).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/webhook"
	"github.com/muster-dev/muster/tools/devcluster"
)

type options struct {
	burst, huge string
	big         string
	restart     string
	replace     int
	replaceOne  int
	profile     int
	out         string
	skipTorch   bool
	torchRuns   int
	// floorPods is what the floor's pods hold: floorPodsSame or
	// floorPodsTemplate.
	floorPods string
	// runs and hugeRuns are how many times each scenario, and the largest,
	// measures each of its sides.
	runs, hugeRuns int
	// floors, when set, are the only floors measured.
	floors []sideKind
	// warmUp runs the first scenario's Muster and F0 sides once,
	// unmeasured, before anything is measured.
	warmUp bool
	// operatorRestart restarts the operator in the largest scenario.
	operatorRestart bool
	// v1alpha1 is whether the CRD serves v1alpha1, as config/production
	// installs it; without, as the chart installs it.
	v1alpha1 bool
	// operatorArgs are flags added to the operator's (-operator-args).
	operatorArgs []string
}

// The floor's pods: the same pods Muster makes (its environment, labels
// and annotation on the role's template), less the owner reference and
// tracking finalizer only the operator needs; or the template alone, as a
// script that tells no task who it is would write them.
const (
	floorPodsSame     = "same"
	floorPodsTemplate = "template"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == floorCommand {
		if err := floorMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench floor:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	var floors string
	flag.StringVar(&o.burst, "burst", "250x4", "JOBSxPODS: many small jobs at once, and the replacement test on them; empty skips")
	flag.IntVar(&o.replace, "replace", 100, "jobs of the burst that lose a pod, to time its replacement; 0 skips")
	flag.IntVar(&o.replaceOne, "replace-one", 10, "jobs of the burst that then lose a pod one at a time, each once the one before runs again and the writes settle (the jobs after those of -replace, where there are enough); 0 skips")
	flag.StringVar(&o.big, "big", "500,5000", "comma-separated pod counts of single big jobs; empty skips")
	flag.StringVar(&o.restart, "restart", "1000,5000", "comma-separated pod counts of gangs of which one member fails, restarted whole in place, by re-creating its pods, and by a plain client; empty skips")
	flag.StringVar(&o.huge, "huge", "1000x10", "JOBSxPODS: the largest run; empty skips")
	flag.StringVar(&o.out, "out", "_output/bench", "folder of the report")
	flag.IntVar(&o.profile, "profile", 0, "record the API server's CPU profile over the first SECONDS of each side of each scenario, the operator's over the same seconds of its side, and the operator's heap once its pods all run, into the report's folder; 0 skips")
	flag.BoolVar(&o.skipTorch, "skip-torch", false, "skip the real-torch recovery and rescale measurements")
	flag.IntVar(&o.torchRuns, "torch-runs", 3, "times to run the real-torch measurements, Muster's and the floor's in turn; the report gives each time's median")
	flag.StringVar(&o.floorPods, "floor-pods", floorPodsSame, "what the floor's pods hold: same (Muster's pods: its environment, labels and annotation, without its owner reference and finalizer) or template (the role's template alone)")
	flag.IntVar(&o.runs, "runs", 5, "times each scenario measures each of its sides, turning their order by one each time; the report gives medians, with min and max")
	flag.IntVar(&o.hugeRuns, "huge-runs", 3, "the same for the largest scenario (-huge)")
	flag.BoolVar(&o.warmUp, "warm-up", true, "run the first scenario's Muster and F0 sides once, unmeasured, before anything is measured (a fresh cluster's watches fall behind once); false saves that time, and the first side measured pays for them")
	flag.BoolVar(&o.operatorRestart, "operator-restart", true, "in the largest scenario (-huge), restart the operator (SIGTERM, as an upgrade does) once Muster's pods all run, and time its next instance to leading and to every job reconciled")
	flag.BoolVar(&o.v1alpha1, "v1alpha1", true, "serve the deprecated muster.dev/v1alpha1 through the conversion webhook, as config/production does (the API server then converts every TrainingJob write for the version's watch cache); false serves v1beta1 alone, as the chart does")
	var operatorArgs string
	flag.StringVar(&operatorArgs, "operator-args", "", "flags added to the operator's own, separated by spaces (\"--status-batch-start --concurrent-reconciles=200\"): one side of an A/B against the defaults")
	flag.StringVar(&floors, "floors", "", "comma-separated floors to measure where a scenario has them (F0, F1, F1s, F1n, F2, F2-upstream); empty measures each scenario's own")
	flag.Parse()
	o.operatorArgs = strings.Fields(operatorArgs)
	for _, f := range strings.Split(floors, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		k, err := parseSideKind(f)
		if err != nil || k == sideMuster {
			fmt.Fprintf(os.Stderr, "bench: -floors %q: F0, F1, F1s, F1n, F2 or F2-upstream\n", floors)
			os.Exit(2)
		}
		o.floors = append(o.floors, k)
	}
	if o.runs < 1 || o.hugeRuns < 1 {
		fmt.Fprintln(os.Stderr, "bench: -runs and -huge-runs: at least 1")
		os.Exit(2)
	}
	if o.floorPods != floorPodsSame && o.floorPods != floorPodsTemplate {
		fmt.Fprintf(os.Stderr, "bench: -floor-pods %q: same or template\n", o.floorPods)
		os.Exit(2)
	}
	if o.torchRuns < 1 {
		fmt.Fprintf(os.Stderr, "bench: -torch-runs %d: at least 1 (-skip-torch skips them)\n", o.torchRuns)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// restarts are the gang restarts the flags ask for.
func restarts(o options) ([]*restartScenario, error) {
	var out []*restartScenario
	if o.restart == "" {
		return nil, nil
	}
	for _, f := range strings.Split(o.restart, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 2 {
			return nil, fmt.Errorf("-restart %q: pod counts of at least 2, e.g. 1000,5000", o.restart)
		}
		out = append(out, &restartScenario{pods: p})
	}
	return out, nil
}

// The floors each scenario measures Muster against (see floors.go), those
// measured once, for the record, and those only -floors asks for: the
// goals compare the burst with the object floor and the built-in Job
// controller, a single big job with the pods alone, and the largest run
// with the object floor.
var (
	burstFloors      = []sideKind{sideF0, sideF1, sideF1s, sideF2}
	burstFloorsOnce  = []sideKind{sideF2Upstream}
	burstFloorsAsked = []sideKind{sideF1n}
	bigFloors        = []sideKind{sideF0}
	hugeFloors       = []sideKind{sideF1}
)

// scenarios are the runs the flags ask for.
func scenarios(o options) ([]*scenario, error) {
	var out []*scenario
	// kinds are Muster and the floors of floors that -floors leaves, and
	// those of asked that it names.
	kinds := func(floors []sideKind, asked ...sideKind) []sideKind {
		k := []sideKind{sideMuster}
		for _, f := range floors {
			if len(o.floors) == 0 || slices.Contains(o.floors, f) {
				k = append(k, f)
			}
		}
		for _, f := range asked {
			if slices.Contains(o.floors, f) {
				k = append(k, f)
			}
		}
		return k
	}
	if o.burst != "" {
		j, p, err := parseSize(o.burst)
		if err != nil {
			return nil, fmt.Errorf("-burst: %w", err)
		}
		out = append(out, &scenario{name: "burst", jobs: j, perJob: p, replace: min(o.replace, j),
			replaceOne: min(o.replaceOne, j), kinds: kinds(burstFloors, burstFloorsAsked...), once: kinds(burstFloorsOnce)[1:], runs: o.runs})
	}
	if o.big != "" {
		for _, f := range strings.Split(o.big, ",") {
			p, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || p < 1 {
				return nil, fmt.Errorf("-big %q: pod counts, e.g. 500,5000", o.big)
			}
			out = append(out, &scenario{name: fmt.Sprintf("big%d", p), jobs: 1, perJob: p, kinds: kinds(bigFloors), runs: o.runs})
		}
	}
	if o.huge != "" {
		j, p, err := parseSize(o.huge)
		if err != nil {
			return nil, fmt.Errorf("-huge: %w", err)
		}
		out = append(out, &scenario{name: "huge", jobs: j, perJob: p, kinds: kinds(hugeFloors), runs: o.hugeRuns, restartOperator: o.operatorRestart})
	}
	return out, nil
}

func parseSize(s string) (int, int, error) {
	js, ps, ok := strings.Cut(s, "x")
	j, err1 := strconv.Atoi(js)
	p, err2 := strconv.Atoi(ps)
	if !ok || err1 != nil || err2 != nil || j < 1 || p < 1 {
		return 0, 0, fmt.Errorf("%q: JOBSxPODS, e.g. 250x4", s)
	}
	return j, p, nil
}

func run(o options) (err error) {
	// Interrupted, the bench stops what it measures and still takes its
	// cluster down (below), rather than leave it running.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runs, err := scenarios(o)
	if err != nil {
		return err
	}
	gangs, err := restarts(o)
	if err != nil {
		return err
	}
	cfg, err := devcluster.NewConfig()
	if err != nil {
		return err
	}
	cfg.StateDir = filepath.Join(cfg.Cache, "bench")
	// One side of one scenario runs at a time: room for the largest, 110
	// pods a node.
	most := 0
	for _, s := range runs {
		most = max(most, s.jobs*s.perJob)
	}
	for _, g := range gangs {
		most = max(most, g.pods)
	}
	cfg.FakeNodes, cfg.GPUsPerNode = most/100+2, 8
	cfg.Out = os.Stderr
	cfg.Profiling = o.profile > 0
	cfg.OperatorArgs = o.operatorArgs
	cfg.ControllerManagerQPS, cfg.ControllerManagerBurst = operatorQPS, operatorBurst
	if err := devcluster.Down(ctx, cfg); err != nil {
		return err
	}
	if err := devcluster.Up(ctx, cfg); err != nil {
		return err
	}
	defer func() {
		if derr := devcluster.Down(context.WithoutCancel(ctx), cfg); derr != nil && err == nil {
			err = derr
		}
	}()
	rest, err := cfg.RESTConfig()
	if err != nil {
		return err
	}
	rest.QPS, rest.Burst = 500, 1000 // the bench's own calls must not be the bottleneck
	cs, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}
	c, err := client.New(rest, client.Options{Scheme: scheme()})
	if err != nil {
		return err
	}
	if err := serveVersions(ctx, c, o.v1alpha1); err != nil {
		return err
	}
	operator, err := operatorProcess()
	if err != nil {
		return err
	}
	procs, err := measuredProcesses(cfg, operator)
	if err != nil {
		return err
	}
	track, err := newTracker(ctx, cs)
	if err != nil {
		return err
	}
	opMetrics, err := newOperatorMetrics(ctx, cs, operator.pid)
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, cs: cs, c: c, o: o, track: track,
		operator: operator, opMetrics: opMetrics, procs: procs,
		report: &report{started: time.Now(), floorPods: o.floorPods, v1alpha1: o.v1alpha1, operatorArgs: o.operatorArgs}}
	if err := b.setUpFloors(ctx, rest); err != nil {
		return err
	}
	if err := b.runAll(ctx, runs, gangs); err != nil {
		return err
	}
	return b.report.write(o.out)
}

// runAll runs the scenarios, then the gang restarts, then real torch, into
// the report.
func (b *bench) runAll(ctx context.Context, runs []*scenario, gangs []*restartScenario) error {
	if err := b.runScenarios(ctx, runs); err != nil {
		return err
	}
	// Each scenario resets the high-water mark as it starts: the run's is
	// the highest of theirs.
	for _, s := range runs {
		for _, m := range s.sides[sideMuster] {
			b.report.peakRSS = max(b.report.peakRSS, m.peakRSS)
		}
	}
	for _, g := range gangs {
		if err := b.runRestart(ctx, g); err != nil {
			return err
		}
		b.report.restarts = append(b.report.restarts, g)
	}
	if !b.o.skipTorch {
		if err := b.torch(ctx); err != nil {
			return fmt.Errorf("torch: %w", err)
		}
	}
	return nil
}

type bench struct {
	cfg *devcluster.Config
	cs  kubernetes.Interface
	c   client.Client
	// floorCS is the plain client of the gang restarts, floorConfig the
	// kubeconfig of every floor's client (a ServiceAccount's).
	floorCS     kubernetes.Interface
	floorConfig string
	o           options
	track       *tracker
	operator    process
	opMetrics   *operatorMetrics
	// procs are the measured processes, by name.
	procs  map[string]process
	report *report
}

// runScenarios warms the cluster up, then runs each scenario into the
// report.
func (b *bench) runScenarios(ctx context.Context, runs []*scenario) error {
	if len(runs) == 0 {
		return nil
	}
	if b.o.warmUp {
		if err := b.warmUp(ctx, runs[0]); err != nil {
			return fmt.Errorf("warming up: %w", err)
		}
	}
	for _, s := range runs {
		if err := b.runScenario(ctx, s); err != nil {
			return err
		}
		b.report.scenarios = append(b.report.scenarios, s)
	}
	return nil
}

// measuredProcesses finds the processes whose CPU the bench reports.
func measuredProcesses(cfg *devcluster.Config, operator process) (map[string]process, error) {
	procs := map[string]process{operatorName: operator}
	for _, name := range measured {
		if name == operatorName || name == floorClientName {
			continue // the floors' clients are measured while they run
		}
		pid, ok := cfg.ComponentPID(name)
		if !ok {
			return nil, fmt.Errorf("the %s of the bench cluster does not run", name)
		}
		procs[name] = process{pid}
	}
	return procs, nil
}

// warmUp runs a scenario's two sides once, unmeasured, before anything is
// measured. The API server sizes each watch's buffer when the watch
// starts, from how many events its cache has held lately: the watches the
// scheduler, the controller manager, KWOK and the operator open on a fresh
// cluster get the smallest, fall behind in the first burst and are closed
// and opened again with larger ones. Without a warm-up that first burst,
// Muster's side, would pay for it alone; and with the floor's side alone
// it would still pay for the operator's own watches (its pods, its
// Services, its TrainingJobs), which see nothing of the floor's pods.
func (b *bench) warmUp(ctx context.Context, s *scenario) error {
	w := &scenario{name: "warmup", jobs: s.jobs, perJob: s.perJob, kinds: []sideKind{sideMuster, sideF0}, runs: 1}
	b.logf("warming up: %d pods through Muster, then with the plain client, unmeasured", w.jobs*w.perJob)
	// Nothing of it is reported, so it writes no profile either.
	profile := b.o.profile
	b.o.profile = 0
	defer func() { b.o.profile = profile }()
	return b.runScenario(ctx, w)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

// serveVersions leaves the CRD as config/dev installs it, serving
// v1alpha1, or, without v1alpha1, turns it into the chart's as far as
// versions go: v1alpha1 no longer served, so the API server keeps no watch
// cache for it and converts no write for one. The conversion webhook
// stays, for a job still stored as v1alpha1 (none here).
func serveVersions(ctx context.Context, c client.Client, v1alpha1 bool) error {
	if v1alpha1 {
		return nil
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	crd.SetName(webhook.CRDName)
	patch := []byte(`[{"op":"test","path":"/spec/versions/0/name","value":"v1alpha1"},{"op":"replace","path":"/spec/versions/0/served","value":false}]`)
	if err := c.Patch(ctx, crd, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("no longer serving v1alpha1: %w", err)
	}
	return nil
}
