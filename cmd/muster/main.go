// Command muster is Muster's command-line tool. Installed on PATH as
// kubectl-muster, it also works as `kubectl muster`.
package main

import (
	"os"

	"github.com/muster-dev/muster/internal/cli"
)

func main() {
	if err := cli.NewDefaultCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
