// Command buildcluster builds the local cluster's control-plane binaries
// into the cache and prints their folder; hack/build-cluster.sh runs it. It
// is `muster-dev build --control-plane` without the demo and the command
// line, so the integration tests need only tools/devcluster to compile.
//
// With -extras it builds the gang schedulers and Kueue instead, and only
// them: make test-e2e builds them in the background while the install
// tests run, which build the cluster's other binaries themselves.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/muster-dev/muster/tools/devcluster"
)

func main() {
	extras := flag.Bool("extras", false, "build the gang schedulers and Kueue, not the control plane")
	flag.Parse()
	cfg, err := devcluster.NewConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-cluster:", err)
		os.Exit(1)
	}
	cfg.Out = os.Stderr
	set := devcluster.BuildSet{ControlPlane: true}
	if *extras {
		set = devcluster.BuildSet{Coscheduling: true, Volcano: true, Kueue: true}
	}
	bins, err := devcluster.Build(context.Background(), cfg, set)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-cluster:", err)
		os.Exit(1)
	}
	if *extras {
		fmt.Println(bins.Coscheduling, bins.Volcano, bins.Kueue)
		return
	}
	fmt.Println(bins.ControlPlane)
}
