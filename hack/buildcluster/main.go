// Command buildcluster builds the local cluster's control-plane binaries
// into the cache and prints their folder; hack/build-cluster.sh runs it. It
// is `muster-dev build --control-plane` without the demo and the command
// line, so the integration tests need only tools/devcluster to compile.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/muster-dev/muster/tools/devcluster"
)

func main() {
	cfg, err := devcluster.NewConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-cluster:", err)
		os.Exit(1)
	}
	cfg.Out = os.Stderr
	bins, err := devcluster.Build(context.Background(), cfg, devcluster.BuildSet{ControlPlane: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-cluster:", err)
		os.Exit(1)
	}
	fmt.Println(bins.ControlPlane)
}
