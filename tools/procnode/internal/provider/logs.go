package provider

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/muster-dev/muster/tools/procnode/internal/logs"
)

// GetContainerLogs serves a container's log (the current attempt, or the
// previous one) for "kubectl logs" through the API server.
func (p *Provider) GetContainerLogs(ctx context.Context, ns, podName, name string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	r := p.lookup(ns, podName)
	if r == nil {
		// A pod that finished before the node restarted is not run again,
		// but its logs are still on disk.
		return p.logsFromDisk(ctx, ns, podName, name, opts)
	}
	r.mu.Lock()
	var c *ctr
	for _, x := range append(append([]*ctr(nil), r.inits...), r.mains...) {
		if x.spec.Name == name {
			c = x
		}
	}
	if c == nil {
		r.mu.Unlock()
		return nil, errdefs.NotFoundf("container %s is not valid for pod %s", name, podName)
	}
	index := c.restartCount
	started := c.everStarted
	// A container removed by a restart of all containers has not started
	// its next attempt (index), and its last one is the previous.
	waitsAgain := c.removed
	var done <-chan struct{}
	if c.cur != nil && c.cur.index == index {
		done = c.cur.logw.Done()
	}
	waiting := ""
	if c.state.Waiting != nil {
		waiting = c.state.Waiting.Reason
	}
	r.mu.Unlock()

	if opts.Previous {
		if index == 0 || !started {
			return nil, errdefs.InvalidInputf("previous terminated container %q in pod %q not found", name, podName)
		}
		index--
		done = nil
	} else if !started || waitsAgain {
		return nil, errdefs.InvalidInputf("container %q in pod %q is waiting to start: %s", name, podName, waiting)
	}
	o := logOptions(opts)
	o.Follow = opts.Follow
	path := filepath.Join(r.dir, "logs", name, fmt.Sprintf("%d.log", index))
	rc, err := logs.Open(ctx, path, o, done)
	if err != nil {
		return nil, errdefs.NotFoundf("log of container %s: %v", name, err)
	}
	return rc, nil
}

func logOptions(opts api.ContainerLogOpts) logs.Options {
	o := logs.Options{Tail: -1, LimitBytes: opts.LimitBytes, Timestamps: opts.Timestamps}
	if opts.Tail > 0 {
		o.Tail = opts.Tail
	}
	if opts.SinceSeconds > 0 {
		o.Since = time.Now().Add(-time.Duration(opts.SinceSeconds) * time.Second)
	} else if !opts.SinceTime.IsZero() {
		o.Since = opts.SinceTime
	}
	return o
}

// logsFromDisk serves the newest (or, with Previous, the one before) log
// file of a pod the node no longer runs.
func (p *Provider) logsFromDisk(ctx context.Context, ns, podName, name string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	dirs, _ := filepath.Glob(filepath.Join(p.cfg.StateDir, "pods", ns+"_"+podName+"_*"))
	var newest string
	var newestTime time.Time
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.ModTime().After(newestTime) {
			newest, newestTime = d, st.ModTime()
		}
	}
	if newest == "" {
		return nil, errdefs.NotFoundf("pod %s/%s not found on this node", ns, podName)
	}
	files, _ := filepath.Glob(filepath.Join(newest, "logs", name, "*.log"))
	var idx []int
	for _, f := range files {
		if n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".log")); err == nil {
			idx = append(idx, n)
		}
	}
	sort.Ints(idx)
	want := len(idx) - 1
	if opts.Previous {
		want--
	}
	if want < 0 {
		return nil, errdefs.NotFoundf("no log for container %s of pod %s/%s", name, ns, podName)
	}
	return logs.Open(ctx, filepath.Join(newest, "logs", name, fmt.Sprintf("%d.log", idx[want])), logOptions(opts), nil)
}
