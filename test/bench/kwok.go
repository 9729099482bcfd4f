package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/tools/devcluster"
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = musterv1.AddToScheme(s)
	return s
}

// fakePodSpec lands on KWOK nodes, which make pods Running without running
// anything.
func fakePodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector: map[string]string{devcluster.FakeNodeLabel: devcluster.FakeNodeLabelValue},
		Tolerations: []corev1.Toleration{{Key: devcluster.FakeNodeTaintKey, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule}},
		Containers: []corev1.Container{{Name: "main", Image: "fake", Command: []string{"sleep", "inf"}}},
	}
}

func (b *bench) namespace(ctx context.Context, name string) error {
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// waitRunning polls until n pods of the namespace run, and returns when.
func (b *bench) waitRunning(ctx context.Context, ns string, n int, exclude map[types.UID]bool, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		pods, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return time.Time{}, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && !exclude[p.UID] && p.DeletionTimestamp == nil {
				running++
			}
		}
		if running >= n {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%d of %d pods running in %s after %s", running, n, ns, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scale measures creating jobs on KWOK nodes against a plain client that
// creates the same pods itself, then the replacement of lost pods, and
// what the operator spent doing it.
func (b *bench) scale(ctx context.Context) error {
	jobs, per := b.o.jobs, b.o.podsPerJob
	total := jobs * per
	op, err := operatorProcess()
	if err != nil {
		return err
	}
	cpu0 := op.cpuSeconds()

	b.logf("creating %d jobs of %d pods through Muster", jobs, per)
	if err := b.namespace(ctx, "bench-muster"); err != nil {
		return err
	}
	start := time.Now()
	var mu sync.Mutex
	var createErr error
	workqueue.ParallelizeUntil(ctx, 16, jobs, func(i int) {
		job := testutil.MakeJob(fmt.Sprintf("job-%04d", i), "bench-muster").Role("worker", int32(per)).
			RestartPolicy(musterv1.RestartPolicyOnFailure).
			Template(func(p *corev1.PodTemplateSpec) { p.Spec = fakePodSpec() }).Obj()
		if err := b.c.Create(ctx, job); err != nil {
			mu.Lock()
			createErr = err
			mu.Unlock()
		}
	})
	if createErr != nil {
		return createErr
	}
	done, err := b.waitRunning(ctx, "bench-muster", total, nil, 15*time.Minute)
	if err != nil {
		return err
	}
	muster := done.Sub(start)

	b.logf("creating the same %d pods with a plain client", total)
	if err := b.namespace(ctx, "bench-floor"); err != nil {
		return err
	}
	floorCS, err := floorClient(b.cfg)
	if err != nil {
		return err
	}
	start = time.Now()
	workqueue.ParallelizeUntil(ctx, 32, total, func(i int) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i)}, Spec: fakePodSpec()}
		if _, err := floorCS.CoreV1().Pods("bench-floor").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			mu.Lock()
			createErr = err
			mu.Unlock()
		}
	})
	if createErr != nil {
		return createErr
	}
	done, err = b.waitRunning(ctx, "bench-floor", total, nil, 15*time.Minute)
	if err != nil {
		return err
	}
	floor := done.Sub(start)

	b.logf("deleting one pod of every job and waiting for the replacements")
	pods, err := b.cs.CoreV1().Pods("bench-muster").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	gone := map[types.UID]bool{}
	start = time.Now()
	for _, p := range pods.Items {
		if strings.HasSuffix(p.Name, "-worker-0") {
			gone[p.UID] = true
			if err := b.cs.CoreV1().Pods("bench-muster").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
				return err
			}
		}
	}
	done, err = b.waitRunning(ctx, "bench-muster", total, gone, 15*time.Minute)
	if err != nil {
		return err
	}
	replace := done.Sub(start)
	b.report.scale = scaleResult{
		jobs: jobs, pods: total, muster: muster, floor: floor, replace: replace, replaced: len(gone),
		cpu: op.cpuSeconds() - cpu0, peakRSS: op.peakRSS(),
	}
	return nil
}

// floorClient creates pods at the operator's own pod-write rate.
func floorClient(cfg *devcluster.Config) (kubernetes.Interface, error) {
	rest, err := cfg.RESTConfig()
	if err != nil {
		return nil, err
	}
	rest.QPS, rest.Burst = 200, 400 // muster-operator's --kube-api-qps and --kube-api-burst defaults
	return kubernetes.NewForConfig(rest)
}

// process is the operator's host process on the process node.
type process struct{ pid int }

func operatorProcess() (process, error) {
	out, err := exec.Command("pgrep", "-f", "^muster-operator --leader-elect").Output()
	if err != nil {
		return process{}, fmt.Errorf("finding the operator's process: %w", err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(out))[0])
	return process{pid}, err
}

// cpuSeconds is the process's user+system CPU time.
func (p process) cpuSeconds() float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th fields of the whole line.
	f := strings.Fields(string(raw)[strings.LastIndexByte(string(raw), ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // USER_HZ
}

// peakRSS is the process's peak resident memory, in MiB.
func (p process) peakRSS() float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}
