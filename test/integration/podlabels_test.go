package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A running pod's muster.dev/job-name label is removed: the pod leaves the
// operator's cache, which holds only pods with the label, but it is still
// the job's. The operator finds it by name, puts its labels back and says
// so; no restart is counted and the pod runs on. With the admission policy
// Muster installs (config/admission), the change is refused outright.
func TestAPodsMusterLabelsAreKept(t *testing.T) {
	e := newEnv(t)
	e.create(e.job("pl").Role("w", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(5).Obj())
	pods := e.runAll("pl", 2)
	e.waitPhase("pl", musterv1.PhaseRunning)

	pod := pods[1]
	want := pod.Labels
	relabel := func(p *corev1.Pod, opts ...client.PatchOption) error {
		patch := client.MergeFrom(p.DeepCopy())
		changed := p.DeepCopy()
		delete(changed.Labels, musterv1.LabelJobName)
		changed.Labels[musterv1.LabelTaskAttempt] = "7"
		return k8s.Patch(e.ctx(), changed, patch, opts...)
	}
	e.g.Expect(relabel(&pod)).To(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		got := e.pod(pod.Name)
		g.Expect(got.UID).To(gomega.Equal(pod.UID))
		for k, v := range want {
			g.Expect(got.Labels).To(gomega.HaveKeyWithValue(k, v))
		}
	}, timeout, interval).Should(gomega.Succeed())
	e.g.Eventually(func(g gomega.Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(e.ctx(), &list, client.InNamespace(e.ns))).To(gomega.Succeed())
		g.Expect(slices.ContainsFunc(list.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Name == "pl" && ev.Reason == string(musterv1.EventReasonPodLabelsChanged)
		})).To(gomega.BeTrue())
	}, timeout, interval).Should(gomega.Succeed())
	job := e.waitPhase("pl", musterv1.PhaseRunning)
	e.g.Expect(job.Status.Restarts.Total).To(gomega.BeZero())

	applyFile(t, filepath.Join("..", "..", "config", "admission", "pod_labels.yaml"))
	current := e.pod(pod.Name)
	// The policy takes a moment to reach the API server's admission chain:
	// wait for it with dry runs, which admission sees but which change
	// nothing (a change that landed before the policy did would leave the
	// pod relabelled, and the next try a no-op the policy lets through).
	e.g.Eventually(func() error { return relabel(current, client.DryRunAll) }, timeout, interval).Should(
		gomega.MatchError(gomega.ContainSubstring("cannot be changed")))
	e.g.Expect(relabel(current)).To(gomega.MatchError(gomega.ContainSubstring("cannot be changed")))
	// Nor is the annotation through which the operator asks a pod to
	// restart in place, which would make its task read "not made to" or
	// "restarting" for ever.
	reannotate := client.MergeFrom(current.DeepCopy())
	asked := current.DeepCopy()
	if asked.Annotations == nil {
		asked.Annotations = map[string]string{}
	}
	asked.Annotations[musterv1.AnnotationInPlaceRestarts] = "5"
	e.g.Expect(k8s.Patch(e.ctx(), asked, reannotate)).To(gomega.MatchError(gomega.ContainSubstring("in-place-restarts annotation")))
	// Other labels are the user's to change.
	patch := client.MergeFrom(current.DeepCopy())
	current.Labels["team"] = "vision"
	e.g.Expect(k8s.Patch(e.ctx(), current, patch)).To(gomega.Succeed())
	e.g.Expect(e.get("pl").Status.Restarts.Total).To(gomega.BeZero())
}

// applyFile creates every object of a manifest file that is not there yet,
// and deletes them when the test ends.
func applyFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := client.IgnoreAlreadyExists(k8s.Create(context.Background(), obj)); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
}
