package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/controller"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// With the default restart mode Auto, a job that names no restart mode is
// made to restart in place while every Ready, schedulable node declares
// RestartAllContainersOnContainerExits, and to re-create its pods once a
// Ready node that does not joins; a cordoned one does not count. A job
// keeps what its pods were made for when the nodes change: its restart
// re-creates its pod and reports nothing as a fallback.
func TestAutoRestartModeFollowsTheNodes(t *testing.T) {
	e := newEnv(t)
	e.node("muster-auto-a", true)
	e.node("muster-auto-b", true)

	// The suite's operator defaults to Recreate: this test's runs Auto.
	e.replaceOperator()
	auto, err := startOperator(func(o *controller.Options) { o.InPlace.Default = controller.RestartModeAuto })
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	defer auto.stop()

	e.create(e.job("ip").Role("w", 2).Obj())
	for _, p := range e.waitPodCount("ip", 2) {
		e.g.Expect(madeInPlace(&p)).To(gomega.BeTrue(), "%s has no restart watcher though every node declares the feature", p.Name)
	}
	e.g.Expect(nodesRestartInPlace()).To(gomega.Equal(1.0))

	// A Ready node that does not declare the feature joins.
	e.node("muster-auto-c", false)
	e.g.Eventually(nodesRestartInPlace, timeout, interval).Should(gomega.Equal(0.0))
	e.create(e.job("rc").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).RestartScope(musterv1.RestartScopeTask).BackoffLimit(3).Obj())
	pods := e.runAll("rc", 2)
	for _, p := range pods {
		e.g.Expect(madeInPlace(&p)).To(gomega.BeFalse(), "%s was made to restart in place though node muster-auto-c lacks the feature", p.Name)
	}
	e.waitPhase("rc", musterv1.PhaseRunning)

	// It is cordoned: a new job restarts in place again.
	e.editNode("muster-auto-c", func(n *corev1.Node) { n.Spec.Unschedulable = true })
	e.g.Eventually(nodesRestartInPlace, timeout, interval).Should(gomega.Equal(1.0))
	e.create(e.job("ip2").Role("w", 1).Obj())
	for _, p := range e.waitPodCount("ip2", 1) {
		e.g.Expect(madeInPlace(&p)).To(gomega.BeTrue(), "%s has no restart watcher though the node that lacks the feature is cordoned", p.Name)
	}

	// The job made to re-create its pods still does, quietly.
	e.exit(&pods[1], 1, "Error")
	replacement := e.waitPod("rc-w-1", string(pods[1].UID))
	e.g.Expect(madeInPlace(replacement)).To(gomega.BeFalse(), "the replacement in a job whose pods were made to be re-created")
	e.g.Eventually(func(g gomega.Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(e.ctx(), &list, client.InNamespace(e.ns))).To(gomega.Succeed())
		i := slices.IndexFunc(list.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Name == "rc" && ev.Reason == string(musterv1.EventReasonTaskRestarting)
		})
		g.Expect(i).NotTo(gomega.Equal(-1))
		g.Expect(list.Items[i].Note).NotTo(gomega.ContainSubstring("re-creating"), "the restart reports a fallback")
	}, timeout, interval).Should(gomega.Succeed())
}

// madeInPlace is whether pod was made to restart in place: it has the
// restart watcher.
func madeInPlace(pod *corev1.Pod) bool {
	return len(pod.Spec.InitContainers) > 0 && pod.Spec.InitContainers[0].Name == objects.RestartWatcherName
}

// node makes a Ready node, declaring RestartAllContainersOnContainerExits
// or not, as its kubelet would report it; it goes when the test ends.
// Nodes are cluster-wide: the name must be the test's own.
func (e *env) node(name string, declares bool) {
	e.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	e.g.Expect(k8s.Create(e.ctx(), n)).To(gomega.Succeed())
	e.t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
	e.editNode(name, func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
		if declares {
			n.Status.DeclaredFeatures = []string{"RestartAllContainersOnContainerExits"}
		}
	})
}

// editNode changes a node's spec and status.
func (e *env) editNode(name string, edit func(*corev1.Node)) {
	e.t.Helper()
	e.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := k8s.Get(e.ctx(), client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		edit(n)
		spec := n.Spec
		// The status write answers with the spec as stored.
		if err := k8s.Status().Update(e.ctx(), n); err != nil {
			return err
		}
		n.Spec = spec
		return k8s.Update(e.ctx(), n)
	})).To(gomega.Succeed())
}

// nodesRestartInPlace is the operator's muster_nodes_restart_in_place
// gauge: 1 when it found the nodes support restarting in place, 0 when
// not, -1 before it worked it out.
func nodesRestartInPlace() float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() == "muster_nodes_restart_in_place" && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
