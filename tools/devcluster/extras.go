package devcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// The optional components of `muster-dev up`: gang schedulers beside the
// default kube-scheduler (--scheduler) and Kueue (--kueue). Each is built
// from a pinned wrapper module under tools/ (tools/coscheduling,
// tools/volcano, tools/kueue) once per version, like the control plane, and
// runs as a host process. Their CRDs come from the module zips of the same
// versions in the module cache, so nothing of those projects is copied into
// this repository.

// Gang schedulers `up --scheduler` can run.
const (
	// Coscheduling is a second kube-scheduler with the Coscheduling plugin
	// of sigs.k8s.io/scheduler-plugins (PodGroups of scheduling.x-k8s.io).
	Coscheduling = "coscheduling"
	// Volcano is Volcano's scheduler with the queue and PodGroup
	// controllers (PodGroups and Queues of scheduling.volcano.sh).
	Volcano = "volcano"
)

// SchedulerNames lists the gang schedulers in the order they start.
var SchedulerNames = []string{Coscheduling, Volcano}

// The schedulerName a pod sets to be scheduled by each gang scheduler.
const (
	CoschedulingSchedulerName = "scheduler-plugins-scheduler"
	VolcanoSchedulerName      = "volcano"
)

// ParseSchedulers reads the values of --scheduler: each may be one name or
// a comma-separated list; case and blanks do not matter, duplicates are
// dropped, and the result is in SchedulerNames order.
func ParseSchedulers(values []string) ([]string, error) {
	want := map[string]bool{}
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			if !slices.Contains(SchedulerNames, name) {
				return nil, fmt.Errorf("unknown scheduler %q: choose from %s", name, strings.Join(SchedulerNames, ", "))
			}
			want[name] = true
		}
	}
	var out []string
	for _, name := range SchedulerNames {
		if want[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

func (c *Config) wantsScheduler(name string) bool { return slices.Contains(c.Schedulers, name) }

// ExtraVersions are the versions the wrapper modules pin.
type ExtraVersions struct {
	// SchedulerPlugins and its Kubernetes (the kube-scheduler it is built
	// into) from tools/coscheduling.
	SchedulerPlugins, SchedulerPluginsKubernetes string
	// Volcano and the Kubernetes libraries it is built with, from tools/volcano.
	Volcano, VolcanoKubernetes string
	// Kueue from tools/kueue.
	Kueue string
}

// Modules of the optional components, as their wrapper modules require them.
const (
	schedulerPluginsModule = "sigs.k8s.io/scheduler-plugins"
	volcanoModule          = "volcano.sh/volcano"
	kueueModule            = "sigs.k8s.io/kueue"
	kubernetesModule       = "k8s.io/kubernetes"
)

// ReadExtraVersions reads the pinned versions from the wrapper modules.
func ReadExtraVersions(root string) (ExtraVersions, error) {
	pins := func(wrapper string, modules ...string) ([]string, error) {
		path := filepath.Join(root, "tools", wrapper, "go.mod")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, m := range modules {
			v := requiredVersion(string(data), m)
			if v == "" {
				return nil, fmt.Errorf("%s must require %s", path, m)
			}
			out = append(out, v)
		}
		return out, nil
	}
	var v ExtraVersions
	sp, err := pins("coscheduling", schedulerPluginsModule, kubernetesModule)
	if err != nil {
		return v, err
	}
	vc, err := pins("volcano", volcanoModule, kubernetesModule)
	if err != nil {
		return v, err
	}
	kq, err := pins("kueue", kueueModule)
	if err != nil {
		return v, err
	}
	v.SchedulerPlugins, v.SchedulerPluginsKubernetes = sp[0], sp[1]
	v.Volcano, v.VolcanoKubernetes = vc[0], vc[1]
	v.Kueue = kq[0]
	return v, nil
}

// extraBinaryPaths fills in where Build puts the optional components.
func extraBinaryPaths(bin string, v ExtraVersions, b *Binaries) {
	b.Coscheduling = filepath.Join(bin, fmt.Sprintf("coscheduling-%s-k8s-%s", v.SchedulerPlugins, v.SchedulerPluginsKubernetes), "kube-scheduler-coscheduling")
	b.Volcano = filepath.Join(bin, fmt.Sprintf("volcano-%s-k8s-%s", v.Volcano, v.VolcanoKubernetes))
	b.Kueue = filepath.Join(bin, "kueue-"+v.Kueue, "kueue")
}

// extraBuild is one optional binary: a package built in a wrapper module.
type extraBuild struct {
	want        bool
	wrapper     string // folder under tools/
	pkg         string
	out         string
	ldflags     string
	description string
}

func (c *Config) extraBuilds(b *Binaries, v ExtraVersions, set BuildSet) []extraBuild {
	volcanoLD := "-s -w -X volcano.sh/volcano/pkg/version.Version=" + v.Volcano
	return []extraBuild{
		{set.Coscheduling, "coscheduling", ".", b.Coscheduling, versionLDFlags(v.SchedulerPluginsKubernetes),
			fmt.Sprintf("kube-scheduler-coscheduling (scheduler-plugins %s, kubernetes %s)", v.SchedulerPlugins, v.SchedulerPluginsKubernetes)},
		{set.Coscheduling, "coscheduling", "./cmd/podgroup-controller", podGroupControllerBin(b.Coscheduling), "-s -w",
			"podgroup-controller (scheduler-plugins " + v.SchedulerPlugins + ")"},
		{set.Volcano, "volcano", "./cmd/vc-scheduler", filepath.Join(b.Volcano, "vc-scheduler"), volcanoLD,
			"vc-scheduler " + v.Volcano},
		{set.Volcano, "volcano", "./cmd/vc-controller-manager", filepath.Join(b.Volcano, "vc-controller-manager"), volcanoLD,
			"vc-controller-manager " + v.Volcano},
		{set.Kueue, "kueue", kueueModule + "/cmd/kueue", b.Kueue, "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=" + v.Kueue,
			"kueue " + v.Kueue},
	}
}

func (c *Config) buildExtras(ctx context.Context, b *Binaries, set BuildSet) error {
	if !set.Coscheduling && !set.Volcano && !set.Kueue {
		return nil
	}
	v, err := ReadExtraVersions(c.Root)
	if err != nil {
		return err
	}
	for _, x := range c.extraBuilds(b, v, set) {
		if !x.want {
			continue
		}
		dir := filepath.Join(c.Root, "tools", x.wrapper)
		err := c.buildOnce(ctx, x.out, x.description, func(out string) error {
			return goCmd(ctx, dir, nil, "build", "-trimpath", "-ldflags", x.ldflags, "-o", out, x.pkg)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// extraSteps are the optional components in start order. A component that
// was not asked for is skipped unless it already runs (then it is left
// alone, as KWOK is).
func (c *Config) extraSteps(b *Binaries) []step {
	keep := func(name string, want bool) (skip bool, hooks bool) {
		_, runs := c.runningPID(name)
		return !want && !runs, want
	}
	var steps []step
	cosched, coschedHooks := keep("coscheduling", c.wantsScheduler(Coscheduling))
	s := step{comp: c.coschedulingComponent(b.Coscheduling), timeout: 60 * time.Second, skip: cosched}
	if coschedHooks {
		s.before = c.installCoschedulingCRDs
	}
	steps = append(steps, s)

	pgSkip, _ := keep("coscheduling-controller", c.wantsScheduler(Coscheduling))
	steps = append(steps, step{comp: c.podGroupControllerComponent(podGroupControllerBin(b.Coscheduling)), timeout: 60 * time.Second, skip: pgSkip})

	vcSkip, vcHooks := keep("vc-controller-manager", c.wantsScheduler(Volcano))
	s = step{comp: c.volcanoControllersComponent(b.Volcano), timeout: 60 * time.Second, skip: vcSkip}
	if vcHooks {
		s.before = c.installVolcanoCRDs
	}
	steps = append(steps, s)
	vcSkip, vcHooks = keep("vc-scheduler", c.wantsScheduler(Volcano))
	s = step{comp: c.volcanoSchedulerComponent(b.Volcano), timeout: 60 * time.Second, skip: vcSkip}
	if vcHooks {
		s.after = c.waitDefaultQueueOpen
	}
	steps = append(steps, s)

	kqSkip, kqHooks := keep("kueue", c.Kueue)
	s = step{comp: c.kueueComponent(b.Kueue), timeout: 90 * time.Second, skip: kqSkip}
	if kqHooks {
		s.before, s.after = c.installKueue, c.installKueueWebhooks
	}
	return append(steps, s)
}

// extraComponentNames in start order, after the base cluster's.
var extraComponentNames = []string{"coscheduling", "coscheduling-controller", "vc-controller-manager", "vc-scheduler", "kueue"}

// extraComponents are the optional components with their addresses only,
// for status.
func (c *Config) extraComponents() []component {
	return []component{
		c.coschedulingComponent(""), c.podGroupControllerComponent(""), c.volcanoControllersComponent(""), c.volcanoSchedulerComponent(""), c.kueueComponent(""),
	}
}

// moduleDir is the module cache folder of the version of module that a
// wrapper module under tools/ builds, downloaded if missing: the CRDs are
// read from there.
func (c *Config) moduleDir(ctx context.Context, wrapper, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = filepath.Join(c.Root, "tools", wrapper)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &info)
	}
	if err == nil && info.Dir == "" {
		err = fmt.Errorf("no folder: %s", info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("locating %s in the module cache (go mod download in tools/%s): %w %s", module, wrapper, err, strings.TrimSpace(stderr.String()))
	}
	return info.Dir, nil
}

// kubectlApply applies manifests server-side (CRDs with large schemas
// exceed client-side apply's annotation limit).
func (c *Config) kubectlApply(ctx context.Context, files ...string) error {
	bins, err := c.clusterBinaries()
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + c.Kubeconfig(), "apply", "--server-side", "--force-conflicts", "--field-manager=muster-dev"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	cmd := exec.CommandContext(ctx, bins.Kubectl(), args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w\n%s", err, out)
	}
	return nil
}

// waitServed waits until discovery lists each resource ("resource.group/version")
// so that a component's informers find them at start.
func waitServed(ctx context.Context, cs kubernetes.Interface, timeout time.Duration, resources ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, r := range resources {
		name, gv, _ := strings.Cut(r, ".")
		group, version, _ := strings.Cut(gv, "/")
		err := poll(ctx, func(context.Context) error {
			list, err := cs.Discovery().ServerResourcesForGroupVersion(group + "/" + version)
			if err != nil {
				return err
			}
			for _, res := range list.APIResources {
				if res.Name == name {
					return nil
				}
			}
			return fmt.Errorf("%s/%s does not list %s yet", group, version, name)
		})
		if err != nil {
			return fmt.Errorf("the %s CRD is not served: %w", r, err)
		}
	}
	return nil
}

// yamlFiles lists the .yaml files of a folder, sorted.
func yamlFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no .yaml files in %s", dir)
	}
	slices.Sort(files)
	return files, err
}

// extraBuildSet says which optional components up builds: those asked for,
// and those that already run (whose binaries status and down look up).
func (c *Config) extraBuildSet() (coscheduling, volcano, kueue bool) {
	runs := func(name string) bool { _, ok := c.runningPID(name); return ok }
	return c.wantsScheduler(Coscheduling) || runs("coscheduling") || runs("coscheduling-controller"),
		c.wantsScheduler(Volcano) || runs("vc-scheduler") || runs("vc-controller-manager"),
		c.Kueue || runs("kueue")
}
