package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
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
	if w.job.Status.Phase != musterv1.PhaseRunning || w.job.Status.Elastic.StorePod != "el-store" {
		t.Fatalf("phase %s rendezvous %+v", w.job.Status.Phase, w.job.Status.Elastic)
	}

	// The store fails: it is replaced; the workers keep their pods. An
	// operator that dies after counting it, before deleting it, does not
	// count it again.
	w.exit("el-store", 1)
	w.job.Status = w.plan().Status // written, not acted on
	w.step()
	if w.job.Status.Elastic.StoreRestarts != 1 || w.job.Status.Restarts.Total != 0 {
		t.Fatalf("rendezvous %+v restarts %+v", w.job.Status.Elastic, w.job.Status.Restarts)
	}
	w.step()
	if w.pods["el-store"] == nil || w.pods["el-worker-0"] == nil {
		t.Fatal("a new store pod, the workers untouched")
	}

	// Suspending removes it with the workers.
	w.job.Spec.Run.Execution = musterv1.ExecutionSuspend
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

// threeOfMinTwo is an elastic job of 3 workers that needs 2, with a minute
// to get back to 2 when it has fewer.
func threeOfMinTwo() *musterv1.TrainingJob {
	job := testutil.MakeJob("el", "ns").UID("el").Role("worker", 3).Elastic(2, 3).
		RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
	job.Spec.Runtime.PyTorch.Elastic.Rendezvous.Store = musterv1.StoreWorker
	job.Spec.Scaling.BelowMinTimeoutSeconds = 60
	return job
}

func TestBelowMinReplicasWaitsThenFails(t *testing.T) {
	w := newWorld(t, threeOfMinTwo())
	w.runAll()
	if w.job.Status.Elastic.BelowMinSince != nil {
		t.Fatal("3 running of min 2: not below")
	}
	// Two workers lost: one runs, the replacements cannot start.
	w.setPhase("el-worker-1", corev1.PodPending)
	w.setPhase("el-worker-2", corev1.PodPending)
	res := w.step()
	since := w.job.Status.Elastic.BelowMinSince
	if since == nil || res.RequeueAfter != 60*time.Second || w.job.Status.Phase == musterv1.PhaseFailed {
		t.Fatalf("below min: since %v requeue %v phase %s", since, res.RequeueAfter, w.job.Status.Phase)
	}
	w.now = w.now.Add(30 * time.Second)
	w.setPhase("el-worker-1", corev1.PodRunning)
	w.step()
	if w.job.Status.Elastic.BelowMinSince != nil {
		t.Fatal("back at min: the clock clears")
	}
	w.setPhase("el-worker-1", corev1.PodPending)
	w.step()
	w.now = w.now.Add(61 * time.Second)
	w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonBelowMinReplicas {
		t.Fatalf("phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
}

// Suspending, and starting a new attempt, start the below-minReplicas
// clock anew: a job resumed after a long suspension, or retried, gets the
// whole timeout again instead of failing at once.
func TestBelowMinClockRestartsOnSuspendAndNewAttempt(t *testing.T) {
	w := newWorld(t, threeOfMinTwo())
	w.step() // pods made, none running: below the minimum from the start
	if w.job.Status.Elastic.BelowMinSince == nil {
		t.Fatal("no worker runs: below min")
	}
	w.job.Spec.Run.Execution = musterv1.ExecutionSuspend
	w.step()
	if w.job.Status.Elastic.BelowMinSince != nil {
		t.Fatal("a suspended job is not short of workers")
	}
	w.now = w.now.Add(time.Hour)
	w.job.Spec.Run.Execution = musterv1.ExecutionStart
	w.step()
	if since := w.job.Status.Elastic.BelowMinSince; since == nil || !since.Time.Equal(w.now) || w.job.Status.Phase == musterv1.PhaseFailed {
		t.Fatalf("resumed an hour later: the clock starts now, the job does not fail: since %v phase %s", since, w.job.Status.Phase)
	}
	w.job.Status.Elastic.BelowMinSince = new(metav1.NewTime(w.now.Add(-50 * time.Second)))
	w.job.Spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}
	w.job.Spec.Roles[0].RestartPolicy = musterv1.RestartPolicyNever
	w.job.Spec.Roles[0].Completion = &musterv1.CompletionPolicy{MinFailed: new(int32(1))}
	w.runEverything()
	w.exit("el-worker-0", 1)
	w.step()
	if w.job.Status.Attempt != 1 || w.job.Status.Elastic.BelowMinSince != nil {
		t.Fatalf("a new attempt clears the clock: attempt %d since %v", w.job.Status.Attempt, w.job.Status.Elastic.BelowMinSince)
	}
}

// A new attempt's store is made only once the old attempt's store, which
// holds the name while it is deleted gracefully, is gone: a create asked
// meanwhile would only be refused by the API server.
func TestANewAttemptsStoreWaitsForTheOldOneToGo(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("el", "ns").UID("el").Role("worker", 2).Elastic(1, 2).
		RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(3).WithDefaults().Obj())
	w.step()
	w.setPhase("el-store", corev1.PodRunning)
	w.step()
	w.runEverything()
	old := w.pods["el-store"].UID
	w.slow["el-store"] = true // deleted gracefully: it holds the name a while
	w.job.Spec.Run.RestartRequest = "now"
	for range 3 {
		res := w.step()
		for _, p := range res.CreatePods {
			if p.Name == "el-store" && w.pods["el-store"] != nil {
				t.Fatalf("attempt %d asks for its store while %s (deleting: %v) holds the name", w.job.Status.Attempt,
					w.pods["el-store"].UID, w.pods["el-store"].DeletionTimestamp != nil)
			}
		}
	}
	if w.job.Status.Attempt != 1 || w.pods["el-store"] == nil || w.pods["el-store"].UID != old {
		t.Fatalf("attempt %d: want the old store still being deleted", w.job.Status.Attempt)
	}
	delete(w.pods, "el-store")
	if res := w.step(); len(res.CreatePods) != 1 || res.CreatePods[0].Name != "el-store" {
		t.Fatalf("once it is gone, the new store is made: %+v", res.CreatePods)
	}
}
