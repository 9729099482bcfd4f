package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/controller"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/queue/kueue"
)

// namespacedRBAC is what the Helm chart installs with watchNamespaces
// (and every gang backend and Kueue): tools/chart renders the chart and
// keeps this file in step with it.
const namespacedRBAC = "testdata/namespaced-rbac.yaml"

// The namespaces namespacedRBAC was rendered for, and the operator's own.
var (
	watchedNamespaces = []string{"muster-team-a", "muster-team-b"}
	operatorNamespace = "muster-system"
)

// The chart's namespaced RBAC is all the operator needs: run as its
// ServiceAccount, with the cache options of --namespaces, it leads through
// its Lease, runs a job in a watched namespace, drives a native gang and a
// Kueue-admitted job (whose ResourceFlavors it watches cluster-wide) in
// the other, and leaves a job in an unwatched namespace alone; it follows
// the nodes for the restart mode Auto; the API server refuses none of its
// requests.
func TestNamespacedOperatorNeedsOnlyTheChartsRoles(t *testing.T) {
	unwatched := newEnv(t)
	for _, ns := range append([]string{operatorNamespace}, watchedNamespaces...) {
		unwatched.g.Expect(client.IgnoreAlreadyExists(k8s.Create(unwatched.ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(gomega.Succeed())
	}
	teamA := &env{t: t, g: unwatched.g, ns: watchedNamespaces[0]}
	teamB := &env{t: t, g: unwatched.g, ns: watchedNamespaces[1]}
	grantChartRBAC(t)

	// The suite's operator watches every namespace: this test's replaces it.
	unwatched.replaceOperator()
	sa := rest.CopyConfig(cfg)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + operatorNamespace + ":muster-operator",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
	}
	waitForRBAC(t, sa)
	refused := &refusals{}
	sa.Wrap(refused.wrap)

	mgr, err := ctrl.NewManager(sa, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         controller.CacheOptions(watchedNamespaces, gangOptions(), true),
		NewClient:                     controller.NewClient,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
		LeaderElection:                true,
		LeaderElectionID:              "muster-operator-namespaced-test",
		LeaderElectionNamespace:       operatorNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	unwatched.g.Expect(err).NotTo(gomega.HaveOccurred())
	// With the binary's default restart mode, Auto, which follows the
	// nodes through the chart's cluster-wide rule on them (and would fall
	// back to Recreate, refused nothing, without it).
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "nodes"}}}
		unwatched.g.Expect(mgr.GetClient().Create(unwatched.ctx(), review)).To(gomega.Succeed())
		unwatched.g.Expect(review.Status.Allowed).To(gomega.BeTrue(), "the chart does not let the operator %s nodes", verb)
	}
	unwatched.g.Expect(controller.Setup(mgr, controller.Options{ExpectationTimeout: 10 * time.Second, Gang: gangOptions(), Kueue: true,
		InPlace: plan.InPlaceSupport{WatcherImage: "muster-operator:test", Default: controller.RestartModeAuto}})).To(gomega.Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		unwatched.g.Expect(<-done).To(gomega.Succeed())
	}()

	// A plain job runs.
	teamA.create(teamA.job("plain").Role("worker", 2).Obj())
	teamA.runAll("plain", 2)
	teamA.waitPhase("plain", musterv1.PhaseRunning)

	// A native gang gets its Workload and PodGroup.
	teamB.create(teamB.job("gang").Role("worker", 2).Scheduling(musterv1.Scheduling{Backend: musterv1.GangNative}).Obj())
	teamB.eventuallyJob("gang", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Scheduling).NotTo(gomega.BeNil())
		g.Expect(j.Status.Scheduling.PodGroup).NotTo(gomega.BeEmpty())
		g.Expect(condition(j, musterv1.ConditionGangScheduled)).NotTo(gomega.BeNil())
	})

	// A Kueue job waits for admission, then runs on its flavor.
	flavor := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"nodeLabels": map[string]any{"pool": "a"}}}}
	flavor.SetGroupVersionKind(kueue.ResourceFlavorKind)
	flavor.SetName("pool-a")
	teamB.g.Expect(client.IgnoreAlreadyExists(k8s.Create(teamB.ctx(), flavor))).To(gomega.Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), flavor) })
	queued := teamB.job("queued").Role("worker", 2).Obj()
	queued.Labels = map[string]string{kueue.LabelQueueName: "team-b"}
	teamB.create(queued)
	teamB.asKueue(queued, admit)
	for _, p := range teamB.waitPodCount("queued", 2) {
		teamB.g.Expect(p.Spec.NodeSelector).To(gomega.HaveKeyWithValue("pool", "a"), p.Name)
	}

	// A job elsewhere is not the operator's.
	unwatched.create(unwatched.job("elsewhere").Role("worker", 1).Obj())
	unwatched.g.Consistently(func(g gomega.Gomega) {
		g.Expect(unwatched.pods("elsewhere")).To(gomega.BeEmpty())
		g.Expect(unwatched.get("elsewhere").Status.Phase).To(gomega.BeEmpty())
	}, 3*time.Second, 100*time.Millisecond).Should(gomega.Succeed())

	// It led through its Lease in its own namespace.
	lease := &coordinationv1.Lease{}
	unwatched.g.Expect(k8s.Get(unwatched.ctx(), client.ObjectKey{Namespace: operatorNamespace, Name: "muster-operator-namespaced-test"}, lease)).To(gomega.Succeed())

	unwatched.g.Expect(refused.list()).To(gomega.BeEmpty(), "requests the API server refused the operator")

	// The release rule lets the operator patch any pod; the chart's
	// admission policy keeps it to releasing its finalizer.
	asOperator, err := client.New(sa, client.Options{Scheme: scheme})
	unwatched.g.Expect(err).NotTo(gomega.HaveOccurred())
	pod := teamB.pods("queued")[0]
	changed := pod.DeepCopy()
	changed.Spec.Containers[0].Image = "elsewhere.example/other:1"
	unwatched.g.Expect(asOperator.Patch(unwatched.ctx(), changed, client.MergeFrom(&pod))).
		To(gomega.MatchError(gomega.ContainSubstring("does not change what a pod runs")))
	changed = pod.DeepCopy()
	changed.Finalizers = append(changed.Finalizers, "example.com/other")
	unwatched.g.Expect(asOperator.Patch(unwatched.ctx(), changed, client.MergeFrom(&pod))).
		To(gomega.MatchError(gomega.ContainSubstring("only removes its own finalizer")))

	// Outside the namespaces it watches, the release is all it may do:
	// not a label, an annotation or an owner of anyone's pod.
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: unwatched.ns,
		Finalizers: []string{musterv1.FinalizerTracking}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/app:1"}}}}
	unwatched.g.Expect(k8s.Create(unwatched.ctx(), other)).To(gomega.Succeed())
	for what, edit := range map[string]func(*corev1.Pod){
		"label":      func(p *corev1.Pod) { p.Labels = map[string]string{"team": "a"} },
		"annotation": func(p *corev1.Pod) { p.Annotations = map[string]string{"example.com/x": "y"} },
	} {
		changed := other.DeepCopy()
		edit(changed)
		unwatched.g.Expect(asOperator.Patch(unwatched.ctx(), changed, client.MergeFrom(other))).
			To(gomega.MatchError(gomega.ContainSubstring("only removes its")), what)
	}
	released := other.DeepCopy()
	released.Finalizers = nil
	unwatched.g.Expect(asOperator.Patch(unwatched.ctx(), released, client.MergeFrom(other))).To(gomega.Succeed())

	// A watched namespace is deleted, and the operator's Roles there go
	// before the pods it holds: the namespace controller deletes in no set
	// order, so the test deletes the RoleBindings first. The pods' tracking
	// finalizers are still released (the chart's cluster-wide release
	// rule), and the namespace goes.
	teamA.g.Expect(k8s.DeleteAllOf(teamA.ctx(), &rbacv1.RoleBinding{}, client.InNamespace(teamA.ns))).To(gomega.Succeed())
	teamA.g.Expect(k8s.Delete(teamA.ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamA.ns}})).To(gomega.Succeed())
	teamA.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(teamA.ctx(), client.ObjectKey{Name: teamA.ns}, &corev1.Namespace{}))
	}, time.Minute, interval).Should(gomega.BeTrue(), "the deleted namespace %s is gone", teamA.ns)
}

// grantChartRBAC creates the objects of namespacedRBAC and deletes them
// when the test ends.
func grantChartRBAC(t *testing.T) {
	t.Helper()
	applyFile(t, namespacedRBAC)
}

// waitForRBAC waits until the API server's authorizer knows the new
// bindings, so that no refusal the test sees is only their propagation.
func waitForRBAC(t *testing.T, sa *rest.Config) {
	t.Helper()
	c, err := client.New(sa, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string]client.ObjectList{operatorNamespace: &coordinationv1.LeaseList{}}
	for _, ns := range watchedNamespaces {
		lists[ns] = &musterv1.TrainingJobList{}
	}
	flavors := &unstructured.UnstructuredList{}
	flavors.SetGroupVersionKind(kueue.ResourceFlavorKind.GroupVersion().WithKind("ResourceFlavorList"))
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		for ns, l := range lists {
			g.Expect(c.List(context.Background(), l, client.InNamespace(ns))).To(gomega.Succeed())
		}
		g.Expect(c.List(context.Background(), flavors)).To(gomega.Succeed())
	}, timeout, interval).Should(gomega.Succeed())
}

// refusals records the requests the API server answers 403 Forbidden.
type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r.mu.Lock()
			r.got = append(r.got, fmt.Sprintf("%s %s", req.Method, req.URL.RequestURI()))
			r.mu.Unlock()
		}
		return resp, err
	})
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
