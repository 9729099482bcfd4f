// Command muster-procnode is the "process node": a virtual-kubelet that
// registers a Node and runs its pods' containers as host processes, each pod
// in its own network namespace on a private bridge. See README.md.
package main

import (
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/muster-dev/muster/tools/procnode/internal/shim"
)

func main() {
	// The node starts itself as the container shim; see internal/shim.
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		shim.Main(os.Args[2:])
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if os.Geteuid() != 0 {
		log.Fatal("muster-procnode must run as root: it creates network namespaces and mounts")
	}
	if o.cleanup {
		if err := cleanup(o); err != nil {
			log.Fatalf("cleanup: %v", err)
		}
		return
	}
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(o.logLevel))
	if err := run(o, level); err != nil {
		log.Fatal(err)
	}
}
