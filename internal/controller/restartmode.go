package controller

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/observe"
)

// The restart mode Auto. A pod made to restart in place needs a node that
// declares restartInPlaceFeature: the scheduler's NodeDeclaredFeatures
// filter keeps it off the others. On a cluster where only some nodes
// declare it, a gang made to restart in place could then find too few
// nodes and never run, so Auto restarts in place only where every node
// that takes pods now declares it. The operator follows the nodes through
// its cache (trimNode keeps the little it reads of each) and works out
// what they support on their changes (nodeSupport).
//
// Auto decides when a job's pods are made, and the pods keep it: a job
// that has pods goes on in the mode they were made for (autoRestartMode).
// A change in the nodes then never gives one job pods of both kinds, nor
// turns the restarts of a job whose pods were all made to be re-created
// into "fallbacks" that its events would report one by one. A job's pods
// say in their spec what they were made for (observe.InPlaceOf), so the
// choice needs no field of its own, survives the operator's restarts and
// takes the jobs an earlier operator made as they are.

// RestartModeAuto, as the operator's default restart mode
// (Options.InPlace.Default), restarts a job whose spec names no mode in
// place when the cluster's nodes support it, and by re-creating its pods
// otherwise. No job names it: the API knows InPlace and Recreate only.
const RestartModeAuto musterv1.RestartMode = "Auto"

// restartInPlaceFeature is what a node lists in status.declaredFeatures
// when its kubelet restarts all of a pod's containers on a container's
// exit: the name Kubernetes gives the feature
// (k8s.io/component-helpers/nodedeclaredfeatures).
const restartInPlaceFeature = "RestartAllContainersOnContainerExits"

// nodeFacts are what Auto reads of a node.
type nodeFacts struct {
	Name string
	// Ready is whether its Ready condition is True.
	Ready bool
	// Unschedulable is spec.unschedulable: the node is cordoned.
	Unschedulable bool
	// Declares is whether it declares restartInPlaceFeature.
	Declares bool
}

// factsOf is what Auto reads of node.
func factsOf(node *corev1.Node) nodeFacts {
	f := nodeFacts{Name: node.Name, Unschedulable: node.Spec.Unschedulable,
		Declares: slices.Contains(node.Status.DeclaredFeatures, restartInPlaceFeature)}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			f.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return f
}

// nodesRestartInPlace is whether nodes support restarting in place: every
// node that takes pods now (Ready and not cordoned) declares
// restartInPlaceFeature, and there is one. A node that is not Ready or is
// cordoned is left out: it places no pod until it changes, and then this
// is worked out again. When they do not, why not, for the log.
func nodesRestartInPlace(nodes iter.Seq[nodeFacts]) (bool, string) {
	var schedulable int
	var lacking []string
	for n := range nodes {
		if !n.Ready || n.Unschedulable {
			continue
		}
		schedulable++
		if !n.Declares {
			lacking = append(lacking, n.Name)
		}
	}
	switch {
	case schedulable == 0:
		return false, "no node is Ready and schedulable"
	case len(lacking) > 0:
		slices.Sort(lacking)
		return false, fmt.Sprintf("%d of the %d Ready, schedulable nodes do not declare %s: %s",
			len(lacking), schedulable, restartInPlaceFeature, namesHead(lacking, 5))
	}
	return true, ""
}

// namesHead is the first n names, and how many more there are.
func namesHead(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// autoRestartMode is the mode Auto gives a job whose spec names none: while
// it has pods, the one they were made for (InPlace when any of them can
// restart in place); with none (a new job, a resumed one, an attempt whose
// pods are all gone), InPlace when the nodes support it.
func autoRestartMode(pods []*corev1.Pod, nodesInPlace bool) musterv1.RestartMode {
	if len(pods) > 0 {
		for _, p := range pods {
			if observe.InPlaceOf(p) != observe.NotInPlace {
				return musterv1.RestartModeInPlace
			}
		}
		return musterv1.RestartModeRecreate
	}
	if nodesInPlace {
		return musterv1.RestartModeInPlace
	}
	return musterv1.RestartModeRecreate
}

// followingDefault are the pods of job's roles that name no restart mode
// of their own: those Auto decided for. A role that opted out says
// nothing about how the others were made.
func followingDefault(job *musterv1.TrainingJob, pods []*corev1.Pod) []*corev1.Pod {
	own := map[string]bool{}
	for _, r := range job.Spec.Roles {
		if r.RestartMode != "" {
			own[r.Name] = true
		}
	}
	if len(own) == 0 {
		return pods
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if !own[p.Labels[musterv1.LabelRole]] {
			out = append(out, p)
		}
	}
	return out
}

// inPlaceSupport is what the operator offers job's plan for restarting in
// place, with Auto worked out for the job: the plan takes values, and
// follows no nodes.
func (r *Reconciler) inPlaceSupport(job *musterv1.TrainingJob, pods []*corev1.Pod) plan.InPlaceSupport {
	in := r.opts.InPlace
	if in.Default == RestartModeAuto {
		in.Default = musterv1.RestartModeRecreate
		if job.Spec.FailurePolicy.RestartMode == "" {
			in.Default = autoRestartMode(followingDefault(job, pods), r.nodes.restartInPlace())
		}
	}
	return in
}

// trimNode keeps of a node what Auto reads (factsOf): its name, whether it
// is cordoned, its Ready condition's status and whether it declares
// restartInPlaceFeature. A node's labels, annotations, images, addresses
// and other conditions are most of its size (tens of kilobytes with its
// images); what is left is about a kilobyte, most of it the Node struct
// itself, so a cluster of thousands of nodes costs the operator a few
// megabytes.
func trimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion}}
	out.Spec.Unschedulable = node.Spec.Unschedulable
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	if slices.Contains(node.Status.DeclaredFeatures, restartInPlaceFeature) {
		out.Status.DeclaredFeatures = []string{restartInPlaceFeature}
	}
	return out, nil
}

// nodeSupport follows the nodes for Auto: the job controller's watch on
// Nodes hands it their events (it is that watch's handler, and enqueues
// no job), and it keeps each node's facts and what they support. The
// controller starts its workers once the watch has handed over the
// initial list, so the first job it plans already sees every node.
type nodeSupport struct {
	log logr.Logger

	mu    sync.Mutex
	nodes map[string]nodeFacts
	// stale is set when the nodes changed and inPlace was not worked out
	// again: the initial list's events only mark it, so that a cluster of
	// thousands of nodes is worked out once, on the first read, not once
	// per node.
	stale   bool
	known   bool
	inPlace bool
}

var _ handler.EventHandler = (*nodeSupport)(nil)

func newNodeSupport(log logr.Logger) *nodeSupport {
	return &nodeSupport{log: log, nodes: map[string]nodeFacts{}, stale: true}
}

// restartInPlace is whether the nodes support restarting in place; false
// for an operator that does not follow them (nil).
func (s *nodeSupport) restartInPlace() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale {
		s.workOut()
	}
	return s.inPlace
}

// set records a node's facts, or that it is gone (nil), and works out
// what the nodes support at once unless later will do.
func (s *nodeSupport) set(name string, f *nodeFacts, later bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.nodes[name]
	switch {
	case f == nil && !had, f != nil && had && old == *f:
		// Nothing Auto reads changed: most node updates are status
		// reports.
		return
	case f == nil:
		delete(s.nodes, name)
	default:
		s.nodes[name] = *f
	}
	s.stale = true
	if !later {
		s.workOut()
	}
}

// workOut works out what the nodes support, and says so when that
// changed. s.mu is held.
func (s *nodeSupport) workOut() {
	s.stale = false
	ok, why := nodesRestartInPlace(maps.Values(s.nodes))
	if s.known && ok == s.inPlace {
		return
	}
	s.known, s.inPlace = true, ok
	if ok {
		nodesRestartInPlaceGauge.WithLabelValues().Set(1)
		s.log.Info("Every Ready, schedulable node declares "+restartInPlaceFeature+": jobs that name no restart mode restart in place",
			"nodes", len(s.nodes))
		return
	}
	nodesRestartInPlaceGauge.WithLabelValues().Set(0)
	s.log.Info("Jobs that name no restart mode and have no pods yet restart by re-creating their pods", "reason", why, "nodes", len(s.nodes))
}

// Create records a node; one of the initial list is worked out on the
// first read.
func (s *nodeSupport) Create(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if n, ok := e.Object.(*corev1.Node); ok {
		f := factsOf(n)
		s.set(n.Name, &f, e.IsInInitialList)
	}
}

// Update records a node's change.
func (s *nodeSupport) Update(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if n, ok := e.ObjectNew.(*corev1.Node); ok {
		f := factsOf(n)
		s.set(n.Name, &f, false)
	}
}

// Delete forgets a node.
func (s *nodeSupport) Delete(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.set(e.Object.GetName(), nil, false)
}

// Generic events do not come from a cache's watch.
func (s *nodeSupport) Generic(context.Context, event.GenericEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

// The operator follows nodes for Auto:
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// autoOrRecreate is the default restart mode Auto (in.Default) leaves the
// reconciler with: Auto when the operator may follow the nodes (list and
// watch them, as the API server's authorizer answers), else Recreate, said
// once in the log. A namespaced install may grant no rule on Nodes, and a
// watch the operator may not make would keep the job controller from
// starting; jobs then restart as they did before Auto. Without the
// watcher's image no job restarts in place (the operator said why when it
// looked for it), and the nodes need not be followed.
func autoOrRecreate(ctx context.Context, c client.Client, in plan.InPlaceSupport, log logr.Logger) musterv1.RestartMode {
	if in.WatcherImage == "" {
		return musterv1.RestartModeRecreate
	}
	ok, err := canWatchNodes(ctx, c)
	switch {
	case err != nil:
		log.Info("Could not ask whether the operator may list and watch nodes: jobs that name no restart mode restart by re-creating their pods",
			"defaultRestartMode", RestartModeAuto, "error", err.Error())
	case !ok:
		log.Info("The operator may not list and watch nodes: jobs that name no restart mode restart by re-creating their pods",
			"defaultRestartMode", RestartModeAuto, "hint", "grant get, list and watch on nodes, or set --default-restart-mode")
	default:
		return RestartModeAuto
	}
	return musterv1.RestartModeRecreate
}

// canWatchNodes asks the API server whether the operator may list and
// watch Nodes (a SelfSubjectAccessReview, which every authenticated user
// may make).
func canWatchNodes(ctx context.Context, c client.Client) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "nodes"}}}
		if err := c.Create(ctx, review); err != nil {
			return false, err
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}
