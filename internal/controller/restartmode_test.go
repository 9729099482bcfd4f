package controller

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestNodesRestartInPlace(t *testing.T) {
	ready := func(name string, declares bool) nodeFacts {
		return nodeFacts{Name: name, Ready: true, Declares: declares}
	}
	cases := map[string]struct {
		nodes []nodeFacts
		want  bool
	}{
		"no nodes":                  {},
		"every node declares":       {nodes: []nodeFacts{ready("a", true), ready("b", true)}, want: true},
		"one Ready node lacks":      {nodes: []nodeFacts{ready("a", true), ready("b", false)}},
		"no Ready node declares":    {nodes: []nodeFacts{ready("a", false)}},
		"a NotReady node lacks":     {nodes: []nodeFacts{ready("a", true), {Name: "b"}}, want: true},
		"a cordoned node lacks":     {nodes: []nodeFacts{ready("a", true), {Name: "b", Ready: true, Unschedulable: true}}, want: true},
		"only NotReady nodes":       {nodes: []nodeFacts{{Name: "a", Declares: true}}},
		"only cordoned nodes":       {nodes: []nodeFacts{{Name: "a", Ready: true, Unschedulable: true, Declares: true}}},
		"a cordoned node declares":  {nodes: []nodeFacts{ready("a", false), {Name: "b", Ready: true, Unschedulable: true, Declares: true}}},
		"one declaring node of one": {nodes: []nodeFacts{ready("a", true)}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, why := nodesRestartInPlace(slices.Values(tc.nodes))
			if got != tc.want {
				t.Errorf("nodesRestartInPlace = %v (%s), want %v", got, why, tc.want)
			}
			if got == (why != "") {
				t.Errorf("why %q with %v: a reason is given when, and only when, the nodes do not support it", why, got)
			}
		})
	}
}

func TestWhyNamesTheFirstNodesThatLack(t *testing.T) {
	var nodes []nodeFacts
	for _, n := range []string{"g", "f", "e", "d", "c", "b", "a"} {
		nodes = append(nodes, nodeFacts{Name: n, Ready: true})
	}
	_, why := nodesRestartInPlace(slices.Values(nodes))
	if want := "7 of the 7 Ready, schedulable nodes do not declare RestartAllContainersOnContainerExits: a, b, c, d, e and 2 more"; why != want {
		t.Errorf("why %q, want %q", why, want)
	}
}

// A trimmed node tells Auto what the whole one does, and keeps nothing else.
func TestTrimmedNodesGiveTheSameFacts(t *testing.T) {
	whole := map[string]*corev1.Node{
		"declares, Ready": node("a", corev1.ConditionTrue, false, "InPlacePodResize", restartInPlaceFeature),
		"lacks, Ready":    node("b", corev1.ConditionTrue, false, "InPlacePodResize"),
		"NotReady":        node("c", corev1.ConditionFalse, false, restartInPlaceFeature),
		"Ready unknown":   node("d", corev1.ConditionUnknown, false, restartInPlaceFeature),
		"cordoned":        node("e", corev1.ConditionTrue, true, restartInPlaceFeature),
		"no conditions":   {ObjectMeta: metav1.ObjectMeta{Name: "f"}},
	}
	for name, n := range whole {
		t.Run(name, func(t *testing.T) {
			out, err := trimNode(n.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*corev1.Node)
			if d := cmp.Diff(factsOf(n), factsOf(trimmed)); d != "" {
				t.Errorf("the facts differ (-whole +trimmed):\n%s", d)
			}
			if trimmed.Labels != nil || trimmed.Annotations != nil || trimmed.Status.Addresses != nil || trimmed.Status.Images != nil ||
				len(trimmed.Status.Conditions) > 1 || len(trimmed.Status.DeclaredFeatures) > 1 || trimmed.Status.Capacity != nil {
				t.Errorf("kept more than Auto reads: %+v", trimmed)
			}
			if trimmed.ResourceVersion != n.ResourceVersion {
				t.Errorf("resourceVersion %q, want %q", trimmed.ResourceVersion, n.ResourceVersion)
			}
		})
	}
}

func node(name string, ready corev1.ConditionStatus, cordoned bool, features ...string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7", Labels: map[string]string{"kubernetes.io/hostname": name},
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{Unschedulable: cordoned},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
			},
			Addresses:        []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:           []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}}},
			Capacity:         corev1.ResourceList{},
			DeclaredFeatures: features,
		},
	}
}

func TestAutoRestartMode(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j-uid").Role("w", 2).Obj()
	made := func(inPlace bool) *corev1.Pod {
		p, err := objects.DesiredPod(job, &job.Spec.Roles[0], 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if inPlace {
			objects.ApplyInPlace(p, objects.InPlace{WatcherImage: "m"})
		}
		return p
	}
	// An API server without the feature drops the watcher's restart rule:
	// such a pod cannot restart in place, whatever it was made for.
	dropped := made(true)
	dropped.Spec.InitContainers[0].RestartPolicyRules = nil

	cases := map[string]struct {
		pods         []*corev1.Pod
		nodesInPlace bool
		want         musterv1.RestartMode
	}{
		"no pods, the nodes support it":                   {nodesInPlace: true, want: musterv1.RestartModeInPlace},
		"no pods, the nodes do not":                       {want: musterv1.RestartModeRecreate},
		"pods made in place, the nodes no longer do":      {pods: []*corev1.Pod{made(true), made(true)}, want: musterv1.RestartModeInPlace},
		"pods made to be re-created, the nodes now do":    {pods: []*corev1.Pod{made(false), made(false)}, nodesInPlace: true, want: musterv1.RestartModeRecreate},
		"one pod of several made in place":                {pods: []*corev1.Pod{made(false), made(true)}, want: musterv1.RestartModeInPlace},
		"pods whose restart rules the API server dropped": {pods: []*corev1.Pod{dropped}, nodesInPlace: true, want: musterv1.RestartModeRecreate},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := autoRestartMode(tc.pods, tc.nodesInPlace); got != tc.want {
				t.Errorf("autoRestartMode = %s, want %s", got, tc.want)
			}
		})
	}
}

// The watch's events keep the facts; the initial list is worked out once,
// on the first read, and each later change at once.
func TestNodeSupportFollowsTheEvents(t *testing.T) {
	s := newNodeSupport(logr.Discard())
	ctx := context.Background()
	a, b := node("a", corev1.ConditionTrue, false, restartInPlaceFeature), node("b", corev1.ConditionTrue, false, restartInPlaceFeature)
	s.Create(ctx, event.CreateEvent{Object: a, IsInInitialList: true}, nil)
	s.Create(ctx, event.CreateEvent{Object: b, IsInInitialList: true}, nil)
	if s.known || !s.stale {
		t.Fatal("the initial list was worked out before it was read")
	}
	if !s.restartInPlace() {
		t.Fatal("two Ready nodes that declare the feature do not support it")
	}

	lacking := node("c", corev1.ConditionTrue, false)
	s.Create(ctx, event.CreateEvent{Object: lacking}, nil)
	if s.stale || s.inPlace {
		t.Fatalf("a node that joins is not worked out at once: stale %v, inPlace %v", s.stale, s.inPlace)
	}
	cordoned := lacking.DeepCopy()
	cordoned.Spec.Unschedulable = true
	s.Update(ctx, event.UpdateEvent{ObjectOld: lacking, ObjectNew: cordoned}, nil)
	if !s.restartInPlace() {
		t.Error("a cordoned node that lacks the feature still counts")
	}
	// A status report that changes nothing Auto reads is nothing.
	s.Update(ctx, event.UpdateEvent{ObjectOld: cordoned, ObjectNew: cordoned.DeepCopy()}, nil)
	if s.stale {
		t.Error("an unchanged node marked the nodes changed")
	}
	s.Update(ctx, event.UpdateEvent{ObjectOld: cordoned, ObjectNew: lacking}, nil)
	if s.restartInPlace() {
		t.Error("an uncordoned node that lacks the feature does not count")
	}
	s.Delete(ctx, event.DeleteEvent{Object: lacking}, nil)
	if !s.restartInPlace() {
		t.Error("a node that is gone still counts")
	}
	s.Delete(ctx, event.DeleteEvent{Object: a}, nil)
	s.Delete(ctx, event.DeleteEvent{Object: b}, nil)
	if s.restartInPlace() {
		t.Error("no node supports it when there is none")
	}
	var none *nodeSupport
	if none.restartInPlace() {
		t.Error("an operator that follows no nodes restarts in place")
	}
}

func TestAutoOrRecreate(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		image   string
		allowed map[string]bool
		err     error
		want    musterv1.RestartMode
		asked   int
	}{
		"may list and watch nodes": {image: "m", allowed: map[string]bool{"list": true, "watch": true}, want: RestartModeAuto, asked: 2},
		"may not watch them":       {image: "m", allowed: map[string]bool{"list": true}, want: musterv1.RestartModeRecreate, asked: 2},
		"may not list them":        {image: "m", allowed: map[string]bool{"watch": true}, want: musterv1.RestartModeRecreate, asked: 1},
		"the question fails":       {image: "m", err: errors.New("connection refused"), want: musterv1.RestartModeRecreate, asked: 1},
		"no watcher image":         {allowed: map[string]bool{"list": true, "watch": true}, want: musterv1.RestartModeRecreate},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			asked := 0
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					asked++
					review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
					if !ok || review.Spec.ResourceAttributes.Resource != "nodes" {
						t.Fatalf("asked %+v", obj)
					}
					review.Status.Allowed = tc.allowed[review.Spec.ResourceAttributes.Verb]
					return tc.err
				},
			})
			got := autoOrRecreate(context.Background(), c, plan.InPlaceSupport{WatcherImage: tc.image, Default: RestartModeAuto}, logr.Discard())
			if got != tc.want || asked != tc.asked {
				t.Errorf("autoOrRecreate = %s after %d questions, want %s after %d", got, asked, tc.want, tc.asked)
			}
		})
	}
}

// Under Auto a job that names no restart mode gets pods made to restart in
// place where the nodes support it, and pods made to be re-created where
// they do not; one that names its mode gets it.
// autoMadePods are the pods an operator whose default is Auto makes for
// job's first plan, on a cluster of one Ready node that declares the
// in-place feature or not.
func autoMadePods(t *testing.T, job *musterv1.TrainingJob, declares bool) []corev1.Pod {
	t.Helper()
	h := newHarness(t, job, interceptor.Funcs{}, Options{InPlace: plan.InPlaceSupport{WatcherImage: "m", Default: RestartModeAuto}})
	n := node("n", corev1.ConditionTrue, false)
	if declares {
		n.Status.DeclaredFeatures = []string{restartInPlaceFeature}
	}
	h.r.nodes.Create(context.Background(), event.CreateEvent{Object: n, IsInInitialList: true}, nil)
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	return h.pods()
}

func TestAutoMakesPodsForTheNodes(t *testing.T) {
	cases := map[string]struct {
		declares bool
		mode     musterv1.RestartMode
		want     bool
	}{
		"nodes support it":                    {declares: true, want: true},
		"nodes do not":                        {},
		"nodes support it, the job Recreates": {declares: true, mode: musterv1.RestartModeRecreate},
		"nodes do not, the job is InPlace":    {mode: musterv1.RestartModeInPlace, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := twoWorkers()
			job.Spec.FailurePolicy.RestartMode = tc.mode
			pods := autoMadePods(t, job, tc.declares)
			if len(pods) != 2 {
				t.Fatalf("%d pods, want 2", len(pods))
			}
			for _, p := range pods {
				watcher := len(p.Spec.InitContainers) > 0 && p.Spec.InitContainers[0].Name == objects.RestartWatcherName
				if watcher != tc.want {
					t.Errorf("%s made with the restart watcher: %v, want %v", p.Name, watcher, tc.want)
				}
			}
		})
	}
}

// A role that names its own restart mode opts out of Auto: where the
// nodes support restarts in place, its pods are made to be re-created
// while the other roles' restart in place, and its pods say nothing of
// how Auto decided for the others.
func TestARoleOptsOutOfAuto(t *testing.T) {
	job := testutil.MakeJob("j", "ns").UID("j-uid").Role("worker", 2).Role("ps", 1).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
	job.Spec.Roles[1].RestartMode = musterv1.RestartModeRecreate
	pods := autoMadePods(t, job, true)
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	var psPods []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		watcher := len(p.Spec.InitContainers) > 0 && p.Spec.InitContainers[0].Name == objects.RestartWatcherName
		if want := p.Labels[musterv1.LabelRole] == "worker"; watcher != want {
			t.Errorf("%s made with the restart watcher: %v, want %v", p.Name, watcher, want)
		}
		if p.Labels[musterv1.LabelRole] == "ps" {
			psPods = append(psPods, p)
		}
	}
	// With only the opted-out role's pods left (the workers' gone), Auto
	// still decides from the nodes, not from pods it did not make.
	if got := autoRestartMode(followingDefault(job, psPods), true); got != musterv1.RestartModeInPlace {
		t.Errorf("the workers' mode with only the ps pod left: %s, want InPlace", got)
	}
}
