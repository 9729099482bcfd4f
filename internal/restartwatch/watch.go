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
//
// The value the watcher compares against is the one it last acted on,
// kept in a file of its own on a volume that outlives its restarts (an
// emptyDir), not the one it was started with: the kubelet reads the
// environment again at each start, so a watcher that exited for any other
// reason after an ask landed and before it read it would come back with
// the new value and never ask (Start).
package restartwatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

// Start is the value a watcher compares against: the one kept in state
// (the value it last acted on), and on its first start, when state holds
// none, started, the value its environment gave, which it then keeps. An
// empty state keeps nothing, and a state that cannot be read or written,
// or holds no number, leaves the environment's value (logged): what a
// watcher without a state volume does. Only numbers are kept: an empty
// value, taken for the one acted on, would make any value an ask.
func Start(state, started string, logf func(string, ...any)) string {
	started = strings.TrimSpace(started)
	if state == "" {
		return started
	}
	kept, err := os.ReadFile(state)
	switch {
	case err == nil && isNumber(strings.TrimSpace(string(kept))):
		return strings.TrimSpace(string(kept))
	case err == nil:
		logf("%s holds %q, not a number: starting from %q", state, kept, started)
	case !errors.Is(err, os.ErrNotExist):
		logf("cannot read %s, starting from %q: %v", state, started, err)
		return started
	}
	if !isNumber(started) {
		return started
	}
	if err := keep(state, started); err != nil {
		logf("cannot keep %q in %s: %v", started, state, err)
	}
	return started
}

func isNumber(v string) bool {
	_, err := strconv.ParseInt(v, 10, 64)
	return err == nil
}

// keep writes value to state whole: a new file renamed over the old, so a
// watcher killed while writing leaves the old value.
func keep(state, value string) error {
	tmp, err := os.CreateTemp(filepath.Dir(state), ".kept-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(value)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), state)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// Watch polls path every interval until its content, trimmed, is set and
// differs from started, the value from Start: then it keeps that value in
// state (unless state is empty) and returns ErrRestart. The value is kept
// before the exit, so a watcher restarted with every container does not
// ask again; only one killed in the moment between the two comes back
// without asking. It returns nil when ctx ends (the pod is stopping: the
// watcher must then exit with any code but ExitCode). A file that
// cannot be read is read again at the next tick: the kubelet swaps the
// file's directory atomically, and a watcher that gave up would leave the
// pod unable to restart.
func Watch(ctx context.Context, path, state, started string, interval time.Duration, logf func(string, ...any)) error {
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
			value := strings.TrimSpace(string(now))
			logf("in-place restart asked: %s is %q, the last value acted on %q", path, value, started)
			if state != "" && isNumber(value) {
				if err := keep(state, value); err != nil {
					logf("cannot keep %q in %s: %v", value, state, err)
				}
			}
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
