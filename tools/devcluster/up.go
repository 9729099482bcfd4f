package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// markerFile tells `down` that a state dir is ours to remove.
const markerFile = ".muster-dev"

// step is one component to start, with how long it may take to be ready.
type step struct {
	comp    component
	timeout time.Duration
	skip    bool
	// before runs just before the component starts (CRDs its informers
	// need), after once it is ready (what it serves, such as webhooks). Both
	// run on every up that asks for the component, also when it already
	// runs, so they must be idempotent.
	before, after func(context.Context) error
}

// Up builds what the cache lacks and starts the cluster. Components that
// already run are left alone, so a second up is harmless (and completes a
// half-started cluster). When up fails it stops what it started, and
// removes the state dir too if no cluster was running before.
func Up(ctx context.Context, c *Config) (err error) {
	start := time.Now()
	wasRunning := len(c.runningComponents()) > 0
	bins, _, err := c.BinaryPaths()
	if err != nil {
		return err
	}
	if bins.ProcNode != "" && os.Geteuid() != 0 {
		return errors.New("muster-dev up must run as root: the process node gives every pod its own network namespace and mounts")
	}
	steps := c.steps(bins)
	// All ports are checked before building and starting anything, so a
	// clash fails fast and leaves nothing half-started.
	for _, s := range steps {
		if _, running := c.runningPID(s.comp.name); !s.skip && !running {
			if err := c.checkFree(s.comp); err != nil {
				return err
			}
		}
	}
	var started []string
	// From here on, a failure cleans up.
	defer func() {
		if err != nil {
			err = errors.Join(err, c.undoUp(context.WithoutCancel(ctx), wasRunning, started))
		}
	}()

	// KWOK only when fake nodes are asked for, or already run: a cluster
	// without them should not wait minutes for a build it never uses.
	_, kwokRuns := c.runningPID("kwok")
	set := BuildSet{ControlPlane: true, CoreDNS: true, KWOK: c.FakeNodes > 0 || kwokRuns, ProcNode: true, Operator: !c.NoOperator}
	set.Coscheduling, set.Volcano, set.Kueue = c.extraBuildSet()
	if _, err := Build(ctx, c, set); err != nil {
		return err
	}
	if err := c.prepareState(); err != nil {
		return err
	}
	if err := c.recordBinaries(bins); err != nil {
		return err
	}
	for _, s := range steps {
		if s.skip {
			continue
		}
		ok, err := c.runStep(ctx, s)
		if ok {
			started = append(started, s.comp.name)
		}
		if err != nil {
			return err
		}
	}
	if err := c.populate(ctx, bins); err != nil {
		return err
	}
	c.logf("cluster up in %s; kubeconfig %s", since(start), c.Kubeconfig())
	c.logf("note: the process node is a trusted, single-user development node: its pods are root processes " +
		"on this machine, kept within their resources' CPU and memory limits and the default capabilities, not sandboxed")
	return nil
}

// undoUp cleans up after a failed up: the whole cluster if none ran
// before, else what this up started.
func (c *Config) undoUp(ctx context.Context, wasRunning bool, started []string) error {
	c.logf("up failed; cleaning up what it started")
	if !wasRunning {
		return Down(ctx, c)
	}
	for i := len(started) - 1; i >= 0; i-- {
		c.stop(started[i], 10*time.Second)
		if started[i] == "kueue" {
			c.removeKueueWebhooks(ctx)
		}
	}
	return nil
}

// runStep starts one component between its hooks, and reports whether it
// started it (false: it already ran, or it failed before it started).
func (c *Config) runStep(ctx context.Context, s step) (bool, error) {
	if s.before != nil {
		if err := s.before(ctx); err != nil {
			return false, fmt.Errorf("preparing %s: %w", s.comp.name, err)
		}
	}
	started, err := c.start(ctx, s.comp, s.timeout)
	if err != nil {
		return started, err
	}
	if s.after != nil {
		if err := s.after(ctx); err != nil {
			return started, fmt.Errorf("%s: %w", s.comp.name, err)
		}
	}
	return started, nil
}

// steps are the components in start order.
func (c *Config) steps(bins *Binaries) []step {
	_, kwokRuns := c.runningPID("kwok")
	return append([]step{
		{comp: c.etcdComponent(bins.ControlPlane), timeout: 30 * time.Second},
		{comp: c.apiServerComponent(bins.ControlPlane), timeout: 90 * time.Second},
		{comp: c.controllerManagerComponent(bins.ControlPlane), timeout: 60 * time.Second},
		{comp: c.schedulerComponent(bins.ControlPlane), timeout: 60 * time.Second},
		{comp: c.dnsComponent(bins.CoreDNS), timeout: 60 * time.Second},
		{comp: c.registryComponent(bins.Registry), timeout: 30 * time.Second},
		{comp: c.procNodeComponent(bins.ProcNode), timeout: 60 * time.Second, skip: bins.ProcNode == ""},
		{comp: c.kwokComponent(bins.KWOK), timeout: 30 * time.Second, skip: c.FakeNodes <= 0 && !kwokRuns},
	}, c.extraSteps(bins)...)
}

// populate creates the fake nodes and installs the operator.
func (c *Config) populate(ctx context.Context, bins *Binaries) error {
	if bins.ProcNode == "" {
		c.logf("WARNING: tools/procnode has no main package yet: no process node, so no pod can run")
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	if c.FakeNodes >= 0 {
		t := time.Now()
		if err := reconcileFakeNodes(ctx, cs, c.FakeNodes, c.GPUsPerNode); err != nil {
			return err
		}
		if c.FakeNodes > 0 {
			c.logf("%-24s %d with %d nvidia.com/gpu each, in %s", "fake nodes", c.FakeNodes, c.GPUsPerNode, since(t))
		}
	}
	switch {
	case c.NoOperator:
		return nil
	case bins.ProcNode == "":
		c.logf("skipping the operator: it runs on the process node")
		return nil
	default:
		return c.installOperator(ctx, bins, cs, 3*time.Minute)
	}
}

// prepareState writes what the processes read: certificates, kubeconfigs
// and config files. Certificates are made once per state dir, so a second
// up keeps talking to the cluster the first one started.
func (c *Config) prepareState() error {
	if err := os.MkdirAll(c.StateDir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(c.StateDir, markerFile), []byte("state of a muster-dev cluster; `muster-dev down` removes this folder\n"), 0o644); err != nil {
		return err
	}
	if _, err := os.Stat(c.pki("ca.crt")); os.IsNotExist(err) {
		ca, err := writePKI(c)
		if err != nil {
			return fmt.Errorf("writing certificates: %w", err)
		}
		if err := writeKubeconfigs(c, ca); err != nil {
			return fmt.Errorf("writing kubeconfigs: %w", err)
		}
	}
	stages, err := readKWOKStages()
	if err != nil {
		return err
	}
	kwokYAML, err := kwokConfig(stages)
	if err != nil {
		return err
	}
	if err := ensureClientIdentities(c); err != nil {
		return fmt.Errorf("writing kubeconfigs: %w", err)
	}
	for path, data := range map[string]string{
		c.schedulerConfigFile():        c.schedulerConfig(),
		c.corefilePath():               c.corefile(),
		c.kwokConfigPath():             kwokYAML,
		c.coschedulingConfigFile():     c.coschedulingConfig(),
		c.volcanoSchedulerConfigFile(): volcanoSchedulerConfig(),
		c.kueueConfigFile():            c.kueueConfig(),
		c.egressConfigFile():           c.egressConfig(),
	} {
		if err := writeFile(path, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// RestartControllerManager stops kube-controller-manager and starts it
// again with rate limits qps and burst (0 and 0: the local cluster's), for
// a benchmark that measures the built-in controllers at more than one
// rate. It returns once the new process serves its health check.
func RestartControllerManager(ctx context.Context, c *Config, qps, burst int) error {
	bins, err := c.clusterBinaries()
	if err != nil {
		return err
	}
	c.ControllerManagerQPS, c.ControllerManagerBurst = qps, burst
	c.stop("kube-controller-manager", 30*time.Second)
	_, err = c.start(ctx, c.controllerManagerComponent(bins.ControlPlane), 60*time.Second)
	return err
}
