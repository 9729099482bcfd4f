package controller

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/leader"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// CacheOptions limits the operator's cache to what it owns: pods and
// Services that carry a job label, in the watched namespaces (all when
// namespaces is empty). Its memory then grows with Muster's jobs, not with
// the cluster.
func CacheOptions(namespaces []string, gangs GangOptions, kueue bool) cache.Options {
	owned, err := labels.NewRequirement(musterv1.LabelJobName, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("building the owned-objects selector: %v", err))
	}
	selector := labels.NewSelector().Add(*owned)
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:     {Label: selector, Transform: trimPod},
			&corev1.Service{}: {Label: selector, Transform: cache.TransformStripManagedFields()},
			// Only TensorBoards carry a job label among Deployments.
			&appsv1.Deployment{}: {Label: selector, Transform: trimDeployment},
			// Every node, for the restart mode Auto (only read when it is
			// the default), with the little it reads of each.
			&corev1.Node{}: {Transform: trimNode},
		},
	}
	for _, kind := range gangKinds(gangs) {
		opts.ByObject[kind] = cache.ByObject{Label: selector}
	}
	if kueue {
		opts.ByObject[workloadObject()] = cache.ByObject{Label: selector}
		// ResourceFlavors are few and cluster-wide: all of them.
		opts.ByObject[resourceFlavorObject()] = cache.ByObject{}
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// NewClient makes the operator's client, as the manager's NewClient: the
// manager's own, whose pod creates are answered with the pod's metadata
// alone (podcreates.go), and which reads unstructured objects (the gang
// backends' PodGroups, Kueue's Workloads and ResourceFlavors) from the
// cache that CacheOptions scopes, as it reads typed ones: by default
// controller-runtime sends every unstructured read to the API server, once
// per reconcile. Both are set here, in the one function the manager calls,
// so that no caller can take one without the other.
func NewClient(cfg *rest.Config, o client.Options) (client.Client, error) {
	if o.Cache != nil {
		cached := *o.Cache
		cached.Unstructured = true
		o.Cache = &cached
	}
	// One connection pool for the client and its pod creates.
	if o.HTTPClient == nil {
		httpClient, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		o.HTTPClient = httpClient
	}
	c, err := client.New(cfg, o)
	if err != nil {
		return nil, err
	}
	return withMetadataCreates(c, cfg, o.HTTPClient)
}

// trimDeployment keeps what planning reads of a TensorBoard Deployment: its
// metadata (owner, spec hash) and status.
func trimDeployment(obj any) (any, error) {
	dep, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	dep.ManagedFields = nil
	dep.Spec = appsv1.DeploymentSpec{}
	return dep, nil
}

// trimPod keeps of a pod what the operator reads, and drops the rest,
// most of its size: its metadata but the annotations and the labels not
// Muster's, its node (and an MPI pod's SSH Secret), and of its status the phase, reason, message and IP,
// the conditions planning acts on, and each container's end; the strings
// that pods repeat are shared (intern). What is left of a running pod is
// about 1.9 KiB, most of it the Pod struct itself (1.25 KiB), whatever its
// template, annotations and labels, and whatever its kubelet reports.
// TestTrimmedPodsPlanAlike holds it to what planning reads.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	restarts, inPlace := pod.Annotations[musterv1.AnnotationInPlaceRestarts]
	pod.Annotations = nil
	if inPlace {
		pod.Annotations = map[string]string{intern(musterv1.AnnotationInPlaceRestarts): intern(restarts)}
	}
	pod.GenerateName = ""
	pod.Namespace = intern(pod.Namespace)
	pod.Labels = musterLabels(pod.Labels)
	for i := range pod.OwnerReferences {
		ref := &pod.OwnerReferences[i]
		ref.APIVersion, ref.Kind, ref.Name = intern(ref.APIVersion), intern(ref.Kind), intern(ref.Name)
		ref.UID = types.UID(intern(string(ref.UID)))
	}
	for i := range pod.Finalizers {
		pod.Finalizers[i] = intern(pod.Finalizers[i])
	}
	// An MPI pod's SSH volume says which Secret its running processes
	// trust: a job an earlier version started records it from there
	// (objects.LegacyMPISSHSecret).
	spec := corev1.PodSpec{NodeName: intern(pod.Spec.NodeName), Volumes: objects.MPISSHVolume(pod.Spec.Volumes)}
	if inPlace {
		spec.InitContainers = watcherRules(pod.Spec.InitContainers)
	}
	pod.Spec = spec
	was := pod.Status
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodPhase(intern(string(was.Phase))), Reason: intern(was.Reason), Message: was.Message, PodIP: was.PodIP,
		Conditions:            plannedConditions(was.Conditions),
		InitContainerStatuses: containerEnds(was.InitContainerStatuses, inPlace),
		ContainerStatuses:     containerEnds(was.ContainerStatuses, inPlace),
	}
	return pod, nil
}

// watcherRules is, of a pod's init containers, the restart watcher with
// its name and restart rules alone: whether the API server kept them says
// whether the pod can restart in place (observe.InPlaceOf).
func watcherRules(all []corev1.Container) []corev1.Container {
	for _, c := range all {
		if c.Name == objects.RestartWatcherName {
			return []corev1.Container{{Name: intern(c.Name), RestartPolicyRules: c.RestartPolicyRules}}
		}
	}
	return nil
}

// musterLabelPrefix begins the keys of every label Muster sets.
var musterLabelPrefix = musterv1.GroupVersion.Group + "/"

// musterLabels are the pod's muster.dev/ labels, the only ones planning
// and the job index read.
func musterLabels(all map[string]string) map[string]string {
	n := 0
	for k := range all {
		if strings.HasPrefix(k, musterLabelPrefix) {
			n++
		}
	}
	out := make(map[string]string, n)
	for k, v := range all {
		if strings.HasPrefix(k, musterLabelPrefix) {
			out[intern(k)] = intern(v)
		}
	}
	return out
}

// intern is the one copy of s that every cached pod shares. Ten thousand
// pods repeat a few dozen strings (label keys and values, namespace,
// owner, node names, finalizer, phase), and each decoded pod holds its own
// copy of every one.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// plannedConditions are the pod conditions planning reads: a disruption
// (DisruptionTarget), and a scheduler that has not found a node yet
// (PodScheduled, but for True: a scheduled pod, most of them, says so by
// its node name).
func plannedConditions(all []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range all {
		if c.Type == corev1.DisruptionTarget || (c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue) ||
			(c.Type == corev1.AllContainersRestarting && c.Status == corev1.ConditionTrue) {
			c.Type, c.Status, c.Reason = corev1.PodConditionType(intern(string(c.Type))), corev1.ConditionStatus(intern(string(c.Status))), intern(c.Reason)
			out = append(out, c)
		}
	}
	return out
}

// containerEnds are the containers that have ended, with their name and
// end only, and those that wait for a reason worth telling, with that
// reason (observe.WaitingReason): planning reads how a container ended,
// and the task's status why it waits, never how it runs. Of a
// pod that restarts in place it also keeps the restart watcher's start,
// and each container's restart count and last end: how its node restarted
// it, and the failures its restart rule restarted alone
// (observe.InPlaceFailure, observe.NodeRestarts).
func containerEnds(all []corev1.ContainerStatus, inPlace bool) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range all {
		kept := corev1.ContainerStatus{Name: intern(c.Name), State: corev1.ContainerState{Terminated: c.State.Terminated}}
		if reason := observe.WaitingReason(c); reason != "" {
			// Why it waits, for the task's status (observe.Waiting).
			kept.State.Waiting = &corev1.ContainerStateWaiting{Reason: intern(reason)}
		}
		if inPlace {
			// The restart counts tell the restarts a container made alone
			// (observe.NodeRestarts).
			kept.LastTerminationState.Terminated = c.LastTerminationState.Terminated
			kept.RestartCount = c.RestartCount
			if c.Name == objects.RestartWatcherName {
				kept.State.Running = c.State.Running
			}
		}
		if kept.State.Terminated != nil || kept.State.Waiting != nil || kept.LastTerminationState.Terminated != nil || (inPlace && c.Name == objects.RestartWatcherName) {
			out = append(out, kept)
		}
	}
	return out
}

// Setup registers Muster's controller with mgr. The operator binary and the
// integration tests both call it, so the tests run the real wiring.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Throughput == nil {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		opts.Throughput = &throughputReader{cs: cs, http: newMetricsClient()}
	}
	if opts.Progress == nil {
		opts.Progress = &httpProgressReader{http: newMetricsClient()}
	}
	if opts.APIReader == nil {
		opts.APIReader = mgr.GetAPIReader()
	}
	listJobPods, err := indexPods(context.Background(), mgr)
	if err != nil {
		return fmt.Errorf("indexing pods by job: %w", err)
	}
	jobs.setSource(mgr.GetCache(), mgr.Elected())
	// Every write of a leader-elected part goes through the fence.
	c := leader.Fenced(mgr.GetClient(), opts.Fence)
	if opts.StatusClient != nil {
		opts.StatusClient = leader.Fenced(opts.StatusClient, opts.Fence)
	}
	if err := mgr.Add(&storageMigration{client: c, reader: mgr.GetAPIReader()}); err != nil {
		return err
	}
	if opts.InPlace.Default == RestartModeAuto {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		opts.InPlace.Default = autoOrRecreate(ctx, mgr.GetClient(), opts.InPlace, ctrl.Log.WithName("restarts"))
		cancel()
	}
	r := NewReconciler(c, leader.FencedRecorder(mgr.GetEventRecorder("muster-operator"), opts.Fence), opts)
	r.listJobPods = listJobPods
	return r.SetupWithManager(mgr)
}
