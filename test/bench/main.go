// Command bench measures Muster on the local cluster and writes a report
// with every number next to its floor: what the same work costs without
// the operator. Run it with `make bench` (it needs root, like the cluster).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/tools/devcluster"
)

type options struct {
	jobs, podsPerJob int
	out              string
	skipTorch        bool
}

func main() {
	var o options
	flag.IntVar(&o.jobs, "jobs", 200, "TrainingJobs created at once on KWOK nodes")
	flag.IntVar(&o.podsPerJob, "pods-per-job", 5, "pods of each job")
	flag.StringVar(&o.out, "out", "_output/bench", "folder of the report")
	flag.BoolVar(&o.skipTorch, "skip-torch", false, "skip the real-torch recovery and rescale measurements")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) (err error) {
	ctx := context.Background()
	cfg, err := devcluster.NewConfig()
	if err != nil {
		return err
	}
	cfg.StateDir = filepath.Join(cfg.Cache, "bench")
	// Room for the operator's pods and the floor's at once, 110 pods a node.
	cfg.FakeNodes, cfg.GPUsPerNode = (2*o.jobs*o.podsPerJob)/100+2, 8
	cfg.Out = os.Stderr
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
	rest.QPS, rest.Burst = 500, 1000 // the bench's own reads must not be the bottleneck
	cs, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}
	c, err := client.New(rest, client.Options{Scheme: scheme()})
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, cs: cs, c: c, o: o, report: &report{started: time.Now()}}
	if err := b.scale(ctx); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	if !o.skipTorch {
		if err := b.torch(ctx); err != nil {
			return fmt.Errorf("torch: %w", err)
		}
	}
	return b.report.write(o.out)
}

type bench struct {
	cfg    *devcluster.Config
	cs     kubernetes.Interface
	c      client.Client
	o      options
	report *report
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
