package devcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// --- coscheduling: kube-scheduler with the Coscheduling plugin.

func (c *Config) coschedulingConfigFile() string { return c.path("coscheduling.yaml") }

// coschedulingConfig is one profile, CoschedulingSchedulerName, whose queue
// sort and gang plugin are Coscheduling's; everything else is the default
// kube-scheduler. Pods of the default scheduler are not its business.
func (c *Config) coschedulingConfig() string {
	return strings.Join([]string{
		"apiVersion: kubescheduler.config.k8s.io/v1",
		"kind: KubeSchedulerConfiguration",
		"clientConnection:",
		"  kubeconfig: " + c.componentKubeconfig("coscheduling"),
		"  qps: 200",
		"  burst: 400",
		"leaderElection:",
		"  leaderElect: false",
		"profiles:",
		"- schedulerName: " + CoschedulingSchedulerName,
		"  plugins:",
		"    multiPoint:",
		"      enabled:",
		"      - name: Coscheduling",
		"    queueSort:",
		"      enabled:",
		"      - name: Coscheduling",
		"      disabled:",
		`      - name: "*"`,
		"",
	}, "\n")
}

func (c *Config) coschedulingComponent(bin string) component {
	kc := c.componentKubeconfig("coscheduling")
	return component{
		name: "coscheduling",
		bin:  bin,
		args: []string{
			"--config=" + c.coschedulingConfigFile(),
			"--authentication-kubeconfig=" + kc,
			"--authorization-kubeconfig=" + kc,
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", c.Ports.Coscheduling),
			"--profiling=false",
			// The plugin reads PodGroups from a cache of its own, which can
			// lag the scheduler's: a pod retried on a PodGroup update (say
			// minMember lowered) may still see the old one, fail again,
			// and wait for the next periodic retry of unschedulable pods,
			// 5 minutes by default. 30s bounds that wait here.
			"--pod-max-in-unschedulable-pods-duration=30s",
		},
		addr:   fmt.Sprintf("https://127.0.0.1:%d", c.Ports.Coscheduling),
		listen: []listenAddr{tcp(c.Ports.Coscheduling)},
		ready:  httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.Coscheduling)),
	}
}

// podGroupControllerBin is scheduler-plugins' PodGroup controller, built
// next to the scheduler from the same wrapper module.
func podGroupControllerBin(scheduler string) string {
	return filepath.Join(filepath.Dir(scheduler), "podgroup-controller")
}

// podGroupControllerComponent keeps the status of coscheduling's PodGroups
// (phase, and how many of their pods are scheduled, running, done).
func (c *Config) podGroupControllerComponent(bin string) component {
	addr := fmt.Sprintf("127.0.0.1:%d", c.Ports.CoschedulingController)
	return component{
		name: "coscheduling-controller",
		bin:  bin,
		args: []string{
			"--kubeconfig=" + c.componentKubeconfig("coscheduling"),
			"--health-probe-bind-address=" + addr,
		},
		addr:   "http://" + addr,
		listen: []listenAddr{tcp(c.Ports.CoschedulingController)},
		ready:  httpOK("http://" + addr + "/readyz"),
	}
}

// installCoschedulingCRDs applies the PodGroup CRD (scheduling.x-k8s.io)
// that scheduler-plugins ships with the version tools/coscheduling builds,
// and waits until it is served: the scheduler's informers need it.
func (c *Config) installCoschedulingCRDs(ctx context.Context) error {
	dir, err := c.moduleDir(ctx, "coscheduling", schedulerPluginsModule)
	if err != nil {
		return err
	}
	if err := c.kubectlApply(ctx, filepath.Join(dir, "manifests", "coscheduling", "crd.yaml")); err != nil {
		return err
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	return waitServed(ctx, cs, time.Minute, "podgroups.scheduling.x-k8s.io/v1alpha1")
}

// --- Volcano: vc-scheduler, and vc-controller-manager with the queue
// controller (a Queue must be Open before the scheduler admits anything to
// it) and the PodGroup controller.

// VolcanoDefaultQueue is the queue Volcano's scheduler creates and a
// PodGroup without a queue belongs to.
const VolcanoDefaultQueue = "default"

func (c *Config) volcanoSchedulerConfigFile() string { return c.path("vc-scheduler.yaml") }

// volcanoSchedulerConfig names the actions and plugins explicitly (without
// a file the scheduler logs an error and falls back to its built-in set).
// It is the configuration of Volcano's chart, set up for preemption the way
// Volcano's own preemption tests set it up:
//
//   - allocate binds a gang only whole; preempt evicts lower-priority pods
//     of the same queue, and reclaim pods of queues above their deserved
//     share, for a gang that then fits whole; backfill places pods that
//     request nothing.
//   - No enqueue action. With it, a PodGroup becomes Inqueue only once its
//     minResources fit the cluster's idle room (times the overcommit
//     factor), and preempt and reclaim act only for Inqueue PodGroups: on a
//     full cluster a high-priority gang would never be let in, so never
//     preempt. Without it, allocate lets every PodGroup in, and the
//     overcommit plugin, which only votes on enqueueing, has no say.
//   - gang and drf with enablePreemptable: false, as in the chart: the gang
//     plugin spares every pod of a job running at or below its minimum,
//     which is every whole gang.
//   - network-topology-aware keeps a PodGroup with a hard network topology
//     within one HyperNode of its highest tier, and packs a soft one.
func volcanoSchedulerConfig() string {
	return strings.Join([]string{
		`actions: "allocate, preempt, reclaim, backfill"`,
		"tiers:",
		"- plugins:",
		"  - name: priority",
		"  - name: gang",
		"    enablePreemptable: false",
		"  - name: conformance",
		"- plugins:",
		"  - name: drf",
		"    enablePreemptable: false",
		"  - name: predicates",
		"  - name: proportion",
		"  - name: nodeorder",
		"  - name: network-topology-aware",
		"",
	}, "\n")
}

func (c *Config) volcanoSchedulerComponent(dir string) component {
	return component{
		name: "vc-scheduler",
		bin:  filepath.Join(dir, "vc-scheduler"),
		args: []string{
			"--kubeconfig=" + c.componentKubeconfig("volcano"),
			"--scheduler-conf=" + c.volcanoSchedulerConfigFile(),
			"--scheduler-name=" + VolcanoSchedulerName,
			"--default-queue=" + VolcanoDefaultQueue,
			// Every address on loopback: the defaults listen on all interfaces.
			fmt.Sprintf("--listen-address=127.0.0.1:%d", c.Ports.VolcanoSchedulerMetrics),
			fmt.Sprintf("--healthz-address=127.0.0.1:%d", c.Ports.VolcanoScheduler),
			"--enable-healthz=true",
			"--leader-elect=false",
			"--kube-api-qps=200",
			"--kube-api-burst=400",
		},
		addr:   fmt.Sprintf("http://127.0.0.1:%d", c.Ports.VolcanoScheduler),
		listen: []listenAddr{tcp(c.Ports.VolcanoScheduler), tcp(c.Ports.VolcanoSchedulerMetrics)},
		ready:  httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", c.Ports.VolcanoScheduler)),
	}
}

func (c *Config) volcanoControllersComponent(dir string) component {
	return component{
		name: "vc-controller-manager",
		bin:  filepath.Join(dir, "vc-controller-manager"),
		args: []string{
			"--kubeconfig=" + c.componentKubeconfig("volcano"),
			"--controllers=queue-controller,pg-controller",
			"--scheduler-name=" + VolcanoSchedulerName,
			fmt.Sprintf("--listen-address=127.0.0.1:%d", c.Ports.VolcanoControllersMetrics),
			fmt.Sprintf("--healthz-address=127.0.0.1:%d", c.Ports.VolcanoControllers),
			"--enable-healthz=true",
			"--leader-elect=false",
			"--kube-api-qps=200",
			"--kube-api-burst=400",
		},
		addr:   fmt.Sprintf("http://127.0.0.1:%d", c.Ports.VolcanoControllers),
		listen: []listenAddr{tcp(c.Ports.VolcanoControllers), tcp(c.Ports.VolcanoControllersMetrics)},
		ready:  httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", c.Ports.VolcanoControllers)),
	}
}

// installVolcanoCRDs applies every CRD of Volcano's chart for the version
// tools/volcano builds (the scheduler's informers watch more than PodGroups
// and Queues: HyperNodes, NUMA topologies, ...) and waits for the two this
// cluster is for.
func (c *Config) installVolcanoCRDs(ctx context.Context) error {
	dir, err := c.moduleDir(ctx, "volcano", volcanoModule)
	if err != nil {
		return err
	}
	files, err := yamlFiles(filepath.Join(dir, "installer", "helm", "chart", "volcano", "crd", "bases"))
	if err != nil {
		return err
	}
	if err := c.kubectlApply(ctx, files...); err != nil {
		return err
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	return waitServed(ctx, cs, time.Minute,
		"podgroups.scheduling.volcano.sh/v1beta1", "queues.scheduling.volcano.sh/v1beta1")
}

var volcanoQueues = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}

// waitDefaultQueueOpen waits until the scheduler has created the default
// queue and the queue controller has opened it: from then on a PodGroup
// another program creates goes Pending -> Inqueue -> Running.
func (c *Config) waitDefaultQueueOpen(ctx context.Context) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = poll(ctx, func(ctx context.Context) error {
		q, err := dc.Resource(volcanoQueues).Get(ctx, VolcanoDefaultQueue, metav1.GetOptions{})
		if err != nil {
			return err
		}
		status, _ := q.Object["status"].(map[string]any)
		if state, _ := status["state"].(string); state != "Open" {
			return fmt.Errorf("queue %q is %q, not Open", VolcanoDefaultQueue, state)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("volcano's %q queue: %w", VolcanoDefaultQueue, err)
	}
	c.logf("%-24s queue %q Open", "volcano", VolcanoDefaultQueue)
	return nil
}
