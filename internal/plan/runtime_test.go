package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func created(res Result) map[string]bool {
	out := map[string]bool{}
	for _, p := range res.CreatePods {
		out[p.Name] = true
	}
	return out
}

// The MPI launcher is held until every worker runs, as if it had
// dependsOn on each worker role.
func TestMPILauncherWaitsForRunningWorkers(t *testing.T) {
	job := testutil.MakeJob("mpi", "ns").UID("u").Runtime(musterv1.Runtime{MPI: &musterv1.MPIRuntime{}}).
		Role("worker", 2).Role("launcher", 1).WithDefaults().Obj()
	w := newWorld(t, job)
	// The job's SSH Secret first, then its name in status (see
	// TestMPIPodsWaitForTheirSSHSecret).
	w.step()
	w.step()
	res := w.step()
	if got := created(res); !got["mpi-worker-0"] || !got["mpi-worker-1"] || got["mpi-launcher-0"] {
		t.Fatalf("first step created %v, want the workers only", got)
	}
	w.setPhase("mpi-worker-0", corev1.PodRunning)
	if got := created(w.step()); got["mpi-launcher-0"] {
		t.Fatal("the launcher must wait for every worker")
	}
	w.setPhase("mpi-worker-1", corev1.PodRunning)
	if got := created(w.step()); !got["mpi-launcher-0"] {
		t.Fatalf("with every worker running the launcher is created, got %v", got)
	}
}

// A lost task of a TensorFlow, Paddle, MPI or JAX job restarts the whole
// job: its peers learnt their cluster once, at start. A Volcano-style job
// replaces the pod, as its restart policy says.
func TestStaticRuntimesRestartWhole(t *testing.T) {
	cases := map[string]struct {
		rt          musterv1.Runtime
		wantAttempt int32
	}{
		"tensorflow": {musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{}}, 1},
		"jax":        {musterv1.Runtime{JAX: &musterv1.JAXRuntime{}}, 1},
		"volcano":    {musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{}}, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := testutil.MakeJob("j", "ns").UID("u").Runtime(tc.rt).Role("worker", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
			w := newWorld(t, job)
			w.runAll()
			w.exit("j-worker-1", 1)
			for range 3 {
				w.step()
			}
			if got := w.job.Status.Attempt; got != tc.wantAttempt {
				t.Errorf("attempt = %d, want %d", got, tc.wantAttempt)
			}
		})
	}
}
