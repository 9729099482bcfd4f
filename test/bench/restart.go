package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil/kubelet"
)

// restartScenario is one gang of pods of which one member fails, restarted
// whole three ways: by Muster in place, by Muster re-creating its pods, and
// by a plain client that deletes every pod and makes it again.
type restartScenario struct {
	pods                     int
	inPlace, recreate, floor restartSide
	load                     string
}

// restartSide is what one way of restarting the gang took: from the
// failure written to every member seen Running the next attempt.
type restartSide struct {
	took time.Duration
	// firstAsked and asked are from the failure to the first and the last
	// member made for the next attempt or asked to restart in place into
	// it.
	firstAsked, asked time.Duration
	reqs              requests
	cpu               map[string]float64
	ops               counters
	// podRestarts is what the job's attempt history says of the restart
	// (Muster's sides).
	podRestarts musterv1.PodRestarts
}

func (b *bench) runRestart(ctx context.Context, s *restartScenario) error {
	for _, mode := range []musterv1.RestartMode{musterv1.RestartModeInPlace, musterv1.RestartModeRecreate} {
		out := &s.inPlace
		if mode == musterv1.RestartModeRecreate {
			out = &s.recreate
		}
		b.logf("restart %d: a gang of %d pods through Muster, restart mode %s", s.pods, s.pods, mode)
		if err := b.musterRestart(ctx, s.pods, mode, out); err != nil {
			return fmt.Errorf("restart %d, %s: %w", s.pods, mode, err)
		}
	}
	b.logf("restart %d: the same gang with a plain client that re-creates every pod", s.pods)
	if err := b.floorRestart(ctx, s.pods, &s.floor); err != nil {
		return fmt.Errorf("restart %d, floor: %w", s.pods, err)
	}
	s.load = loadAverage()
	return nil
}

// restartJob is a gang whose every member restarts when one fails, as a
// static PyTorch job's does.
func restartJob(ns string, pods int, mode musterv1.RestartMode) *musterv1.TrainingJob {
	j := benchJob(ns, jobName(0), pods)
	j.Spec.Roles[0].RestartScope = musterv1.RestartScopeJob
	j.Spec.FailurePolicy.RestartMode = mode
	j.Spec.FailurePolicy.BackoffLimit = new(int32(3))
	return j
}

func (b *bench) musterRestart(ctx context.Context, pods int, mode musterv1.RestartMode, out *restartSide) error {
	ns := fmt.Sprintf("bench-restart%d-%s", pods, map[musterv1.RestartMode]string{
		musterv1.RestartModeInPlace: "inplace", musterv1.RestartModeRecreate: "recreate"}[mode])
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	job := restartJob(ns, pods, mode)
	start := time.Now()
	if err := b.c.Create(ctx, job); err != nil {
		return err
	}
	if _, err := b.track.wait(ctx, ns, start, pods, 30*time.Minute); err != nil {
		return err
	}
	victim := job.Name + "-worker-1"
	fail := b.failPod
	if mode == musterv1.RestartModeInPlace {
		fail = b.failInPlace
	}
	if err := b.measureRestart(ctx, ns, pods, out, func() error { return fail(ctx, ns, victim) }); err != nil {
		return err
	}
	if err := b.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: job.Name}, job); err != nil {
		return err
	}
	if job.Status.Attempt != 1 || len(job.Status.Attempts) < 1 {
		return fmt.Errorf("the job is on attempt %d after one failure, not 1", job.Status.Attempt)
	}
	for _, a := range job.Status.Attempts {
		if a.ID == 0 && a.PodRestarts != nil {
			out.podRestarts = *a.PodRestarts
		}
	}
	if mode == musterv1.RestartModeInPlace && int(out.podRestarts.InPlace) != pods {
		return fmt.Errorf("%d of %d pods restarted in place (%s)", out.podRestarts.InPlace, pods, out.podRestarts.Message)
	}
	return b.deleteNamespace(ctx, ns)
}

// measureRestart waits for the gang's writes to settle, runs fail, and
// waits for every one of pods to be seen Running again as a new instance:
// a new pod, or the same pod restarted in place.
func (b *bench) measureRestart(ctx context.Context, ns string, pods int, out *restartSide, fail func() error) error {
	before, err := b.settledUsage(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := fail(); err != nil {
		return err
	}
	last, err := b.track.wait(ctx, ns, start, pods, 20*time.Minute)
	if err != nil {
		return err
	}
	out.took = last.Sub(start)
	out.firstAsked, out.asked = b.track.askedSince(ns, start)
	after, err := b.settledUsage(ctx)
	if err != nil {
		return err
	}
	spent := after.minus(before)
	out.reqs, out.cpu, out.ops = spent.api.requests, spent.cpu, spent.ops
	return nil
}

// failInPlace has a training container of a pod that restarts in place
// exit 1 and be restarted alone, as its restart rule has the kubelet do:
// the exit stays in its last state and the pod runs on.
func (b *bench) failInPlace(ctx context.Context, ns, name string) error {
	return b.updatePodStatus(ctx, ns, name, func(p *corev1.Pod) { kubelet.RestartedAlone(p, 1, time.Now()) })
}

// failPod has a pod's training container exit 1, which ends the pod (its
// restart policy is Never), as the kubelet reports it.
func (b *bench) failPod(ctx context.Context, ns, name string) error {
	return b.updatePodStatus(ctx, ns, name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		c := &p.Status.ContainerStatuses[0]
		c.Ready, c.Started = false, new(false)
		c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			FinishedAt: metav1.Now()}}
	})
}

// updatePodStatus writes edit to a pod's status, as its node would, again
// on a conflict with the node's own writes.
func (b *bench) updatePodStatus(ctx context.Context, ns, name string, edit func(*corev1.Pod)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := b.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) == 0 {
			return fmt.Errorf("pod %s has no container status", name)
		}
		edit(p)
		_, err = b.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// floorRestart is the plain client's restart of a gang: its pods and
// Service made as the floor's, then, once one pod fails, every pod
// deleted at once (grace 0) by the floor's creators and each made again
// as soon as its watch sees it gone.
func (b *bench) floorRestart(ctx context.Context, pods int, out *restartSide) error {
	ns := fmt.Sprintf("bench-restart%d-floor", pods)
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	job := floorJob(ns, jobName(0), pods)
	start := time.Now()
	if _, err := b.floorCS.CoreV1().Services(ns).Create(ctx, floorService(job.Name), metav1.CreateOptions{}); err != nil {
		return err
	}
	var mu sync.Mutex
	var createErr error
	workqueue.ParallelizeUntil(ctx, floorCreators, pods, func(i int) {
		if _, err := b.floorCS.CoreV1().Pods(ns).Create(ctx, floorPod(b.o.floorPods, job, i), metav1.CreateOptions{}); err != nil {
			mu.Lock()
			createErr = err
			mu.Unlock()
		}
	})
	if createErr != nil {
		return createErr
	}
	if _, err := b.track.wait(ctx, ns, start, pods, 30*time.Minute); err != nil {
		return err
	}
	// The client watches until the restart is timed, not while the
	// namespace goes.
	stop := make(chan struct{})
	err := b.recreateOnDelete(ns, map[string]*musterv1.TrainingJob{job.Name: job}, stop)
	if err == nil {
		err = b.measureRestart(ctx, ns, pods, out, func() error { return b.failPod(ctx, ns, job.Name+"-worker-1") })
	}
	close(stop)
	if err != nil {
		return err
	}
	return b.deleteNamespace(ctx, ns)
}

// deletedPod is the pod a watch's delete event carries, or nil.
func deletedPod(obj any) *corev1.Pod {
	if d, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
		obj = d.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

// deletePodNow deletes a pod at once (grace 0), as a node lost or a
// process killed leaves it.
func deletePodNow(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	return cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
}
