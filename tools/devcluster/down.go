package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// componentNames in start order; down stops them in reverse.
var componentNames = append([]string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "coredns", "registry", "procnode", "kwok"},
	extraComponentNames...)

func (c *Config) runningComponents() []string {
	var names []string
	for _, n := range componentNames {
		if _, ok := c.runningPID(n); ok {
			names = append(names, n)
		}
	}
	return names
}

// Down stops every component by the pid in its pidfile, has the process
// node remove its network namespaces and bridge, and removes the state dir.
// It is harmless when nothing runs.
func Down(ctx context.Context, c *Config) error {
	start := time.Now()
	var errs []error
	for i := len(componentNames) - 1; i >= 0; i-- {
		name := componentNames[i]
		grace := 10 * time.Second
		if name == "procnode" {
			grace = time.Minute // it stops its pods first, each within its grace period
		}
		t := time.Now()
		if c.stop(name, grace) {
			c.logf("%-24s stopped in %s", name, since(t))
		}
	}
	// Only a state dir that ran a process node may clean up after one: the
	// network it removes is shared by every process node on the host.
	if _, err := os.Stat(c.procNodeStateDir()); err == nil {
		if err := c.cleanupProcNode(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.StateDir, markerFile)); err == nil {
		if len(errs) == 0 {
			if err := os.RemoveAll(c.StateDir); err != nil {
				errs = append(errs, err)
			} else {
				c.logf("removed %s", c.StateDir)
			}
		} else {
			c.logf("kept %s for a look at its logs", c.StateDir)
		}
	} else if _, err := os.Stat(c.StateDir); err == nil {
		errs = append(errs, fmt.Errorf("%s is not a muster-dev state dir (no %s); left alone", c.StateDir, markerFile))
	}
	c.logf("cluster down in %s", since(start))
	return errors.Join(errs...)
}
