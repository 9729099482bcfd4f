// Package restartwatch is the restart watcher: the small native sidecar
// through which the operator restarts a running pod in place.
//
// Kubernetes restarts every container of a pod, init containers included,
// when a container exits with a code that one of its restart rules maps to
// RestartAllContainers; the pod keeps its UID, node, IP and volumes. There is
// no API to ask for that from outside the pod, so the watcher exits with
// that code when the operator asks: the operator raises the pod's
// muster.dev/in-place-restarts annotation, the kubelet rewrites the
// downward API file that carries it, and the watcher, which was started
// with the value it had then, sees it differ.
//
// How the ask reaches every pod was chosen by its cost to the API server,
// for a gang of N pods:
//   - one patch per pod (this): N writes, each delivered to the kubelet's
//     watch of its own pods, which exists anyway; the pods need no token,
//     no RBAC and no connection of their own. The same patch moves the
//     pod's attempt labels, which the restarted containers read through
//     the downward API, so the ask itself costs no extra write.
//   - one object watched by every watcher: one write, but N more
//     long-lived watches for the API server to hold and fan out to, a
//     token and a role in every pod, and still N label patches for the
//     attempt numbers.
//   - polling one object: N reads every period for the job's whole life
//     (5,000 pods polling each second make 5,000 reads a second) to save
//     writes that happen only on a restart.
//
// Reading the downward API file locally costs the cluster nothing.
package restartwatch

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// ExitCode is the code the watcher exits with to have its pod's
// containers restarted; the watcher's restart rule maps it, and nothing
// else, to RestartAllContainers.
const ExitCode = 86

// ErrRestart is what Watch returns when the pod is to restart.
var ErrRestart = errors.New("the operator asked for an in-place restart")

// Watch polls path every interval until its content, trimmed, is set and
// differs from started, the value the watcher was started with: then it
// returns ErrRestart. It returns nil when ctx ends (the pod is stopping:
// the watcher must then exit with any code but ExitCode). A file that
// cannot be read is read again at the next tick: the kubelet swaps the
// file's directory atomically, and a watcher that gave up would leave the
// pod unable to restart.
func Watch(ctx context.Context, path, started string, interval time.Duration, logf func(string, ...any)) error {
	started = strings.TrimSpace(started)
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		now, err := os.ReadFile(path)
		switch {
		case err != nil:
			if err.Error() != lastErr {
				logf("cannot read %s, will read it again: %v", path, err)
				lastErr = err.Error()
			}
		case asked(started, string(now)):
			logf("in-place restart asked: %s is %q, was %q at start", path, strings.TrimSpace(string(now)), started)
			return ErrRestart
		default:
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// asked is whether the file's value asks for a restart: a number above the
// value at start. The operator only ever raises it, so a lower or equal
// one is a late or replayed write, never an ask. An empty file is an
// annotation not set yet; a value that is not a number asks when it
// differs, as a watcher of an earlier version did.
func asked(started, now string) bool {
	now = strings.TrimSpace(now)
	n, errNow := strconv.ParseInt(now, 10, 64)
	s, errStarted := strconv.ParseInt(started, 10, 64)
	if errNow == nil && errStarted == nil {
		return n > s
	}
	return now != "" && now != started
}
