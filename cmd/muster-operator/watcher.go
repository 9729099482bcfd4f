package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/restartwatch"
)

// restartWatcherCommand is the subcommand the restart watcher sidecar of a
// task's pod runs, from the operator's own image: one image to ship, and
// one the node already holds wherever the operator ran.
const restartWatcherCommand = "restart-watcher"

// runRestartWatcher runs the restart watcher with args and returns the
// process's exit code: restartwatch.ExitCode when the operator asked for
// a restart, 0 when the pod stops it, 2 for bad arguments.
func runRestartWatcher(args []string) int {
	fs := flag.NewFlagSet(restartWatcherCommand, flag.ContinueOnError)
	file := fs.String("file", "", "downward API file that carries the pod's "+musterv1.AnnotationInPlaceRestarts+" annotation")
	state := fs.String("state", "", "file on a volume that outlives the watcher's restarts where it keeps the value it last acted on; empty: start from the environment's value each time")
	interval := fs.Duration("interval", 200*time.Millisecond, "how often the file is read")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || *interval <= 0 {
		fmt.Fprintln(os.Stderr, "restart-watcher: --file and a positive --interval are required")
		return 2
	}
	// Stopped with the pod: SIGTERM must never turn into the restart code.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, time.Now().UTC().Format(time.RFC3339)+" "+format+"\n", a...)
	}
	started := restartwatch.Start(*state, os.Getenv(musterv1.EnvInPlaceRestarts), logf)
	err := restartwatch.Watch(ctx, *file, *state, started, *interval, logf)
	if errors.Is(err, restartwatch.ErrRestart) {
		return restartwatch.ExitCode
	}
	return 0
}
