package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestDedicatedStoreLifecycle(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("el", "ns").UID("el").Role("worker", 2).Elastic(1, 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj())
	res := w.step()
	if len(res.CreatePods) != 1 || res.CreatePods[0].Name != "el-store" {
		t.Fatalf("the store comes first, alone: %d creates", len(res.CreatePods))
	}
	store := w.pods["el-store"]
	if store.Spec.Hostname != "el-store" || store.Spec.Subdomain != "el" || store.Labels[musterv1.LabelComponent] != musterv1.ComponentStore {
		t.Fatalf("store pod: %+v", store.ObjectMeta)
	}
	if c := store.Spec.Containers[0]; c.Image != "busybox" || c.Command[0] != "python3" {
		t.Fatalf("the store runs python3 in the role's image: %+v", c)
	}
	w.step()
	if len(w.pods) != 1 {
		t.Fatal("workers wait until the store runs")
	}
	w.setPhase("el-store", corev1.PodRunning)
	if res = w.step(); len(res.CreatePods) != 2 {
		t.Fatalf("then the workers start: %d creates", len(res.CreatePods))
	}
	w.runEverything()
	if w.job.Status.Phase != musterv1.PhaseRunning || w.job.Status.Rendezvous.StorePod != "el-store" {
		t.Fatalf("phase %s rendezvous %+v", w.job.Status.Phase, w.job.Status.Rendezvous)
	}

	// The store fails: it is replaced; the workers keep their pods.
	w.exit("el-store", 1)
	w.step()
	if w.job.Status.Rendezvous.StoreRestarts != 1 || w.job.Status.Restarts.Total != 0 {
		t.Fatalf("rendezvous %+v restarts %+v", w.job.Status.Rendezvous, w.job.Status.Restarts)
	}
	w.step()
	if w.pods["el-store"] == nil || w.pods["el-worker-0"] == nil {
		t.Fatal("a new store pod, the workers untouched")
	}

	// Suspending removes it with the workers.
	w.job.Spec.Run.Suspend = new(true)
	w.step()
	if len(w.pods) != 0 {
		t.Fatalf("suspend removes everything: %d pods", len(w.pods))
	}
}

func TestStoreGoesWhenTheJobFinishes(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("el", "ns").UID("el").Role("worker", 2).Elastic(1, 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).CleanPodPolicy(musterv1.CleanPodPolicyNone).WithDefaults().Obj())
	w.step()
	w.setPhase("el-store", corev1.PodRunning)
	w.step()
	w.runEverything()
	w.exit("el-worker-0", 0)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseSucceeded {
		t.Fatalf("any worker's success ends an elastic job: %s", w.job.Status.Phase)
	}
	if w.pods["el-store"] != nil || w.pods["el-worker-1"] == nil {
		t.Fatal("the store goes even with cleanPodPolicy None; the tasks stay")
	}
}
