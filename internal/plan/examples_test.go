package plan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// examplesJob reads an example's TrainingJob as written, with what the
// API server's schema would default filled in.
func examplesJob(t *testing.T, example string) *musterv1.TrainingJob {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", example, "trainingjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job := &musterv1.TrainingJob{}
	if err := yaml.UnmarshalStrict(data, job); err != nil {
		t.Fatal(err)
	}
	job.Namespace, job.UID = "ns", types.UID("uid-"+example)
	if job.Spec.Run.CleanPodPolicy == "" {
		job.Spec.Run.CleanPodPolicy = musterv1.CleanPodPolicyRunning
	}
	if job.Spec.FailurePolicy.BackoffLimit == nil {
		job.Spec.FailurePolicy.BackoffLimit = new(musterv1.DefaultBackoffLimit)
	}
	if el := job.Spec.Runtime.PyTorch.Elastic; el != nil && el.Rendezvous.Port == 0 {
		el.Rendezvous.Port = 29400
	}
	return job
}

// examples/frameworkcontroller-pet replays FrameworkController's pet: 4
// workers, scaled to 2 and then 3 with minSucceeded patched alongside, as
// the README's patches do. The job succeeds only once the 3 workers left
// have, with FrameworkController's trigger message, and its rendezvous
// store (the original's etcd role) goes with it.
func TestFrameworkControllerPetExample(t *testing.T) {
	w := newWorld(t, examplesJob(t, "frameworkcontroller-pet"))
	rescale := func(n int32) {
		w.job.Spec.Scaling.Replicas = new(n)
		w.job.Spec.Roles[0].Completion.MinSucceeded = new(n)
		w.step()
		w.step()
	}
	w.step()
	w.setPhase("pet-store", corev1.PodRunning)
	w.step()
	w.runEverything()
	w.step()
	if w.job.Status.Phase != musterv1.PhaseRunning || len(w.pods) != 5 {
		t.Fatalf("phase %s with %d pods, want Running with the store and 4 workers", w.job.Status.Phase, len(w.pods))
	}

	rescale(2)
	if w.pods["pet-worker-2"] != nil || w.pods["pet-worker-3"] != nil || w.pods["pet-worker-1"] == nil {
		t.Fatalf("scaled to 2: pods %v", w.podNames())
	}
	rescale(3)
	w.runEverything()
	w.step()
	if w.pods["pet-worker-2"] == nil || w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("scaled to 3: phase %s, pods %v", w.job.Status.Phase, w.podNames())
	}

	// Two workers succeeding is no longer enough.
	for _, name := range []string{"pet-worker-0", "pet-worker-2"} {
		w.now = w.now.Add(time.Second)
		w.exit(name, 0)
		w.step()
	}
	if w.job.Status.Phase != musterv1.PhaseRunning {
		t.Fatalf("phase %s after 2 of 3 succeeded: %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
	w.now = w.now.Add(time.Second)
	w.exit("pet-worker-1", 0)
	w.step()
	w.step()
	comp := w.job.Status.Completion
	if w.job.Status.Phase != musterv1.PhaseSucceeded || comp == nil {
		t.Fatalf("phase %s, completion %+v", w.job.Status.Phase, comp)
	}
	want := "SucceededTaskCount 3 has reached MinSucceededTaskCount 3 in role worker"
	if comp.Reason != musterv1.ReasonCompletionPolicy || comp.Message != want || comp.Role != "worker" || comp.Index == nil || *comp.Index != 1 {
		t.Fatalf("completion %+v, want %q triggered by worker 1", comp, want)
	}
	if w.pods["pet-store"] != nil {
		t.Fatal("the rendezvous store goes with the job")
	}
}

func (w *world) podNames() []string {
	var out []string
	for name := range w.pods {
		out = append(out, name)
	}
	return out
}
