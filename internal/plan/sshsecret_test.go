package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func mpiWorld(t *testing.T) *world {
	job := testutil.MakeJob("mpi", "ns").UID("abcd1234-ffff").Runtime(musterv1.Runtime{MPI: &musterv1.MPIRuntime{}}).
		Role("worker", 2).Role("launcher", 1).RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
	return newWorld(t, job)
}

// sshSecretOf is the Secret a pod mounts its SSH files from.
func sshSecretOf(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == "muster-mpi-ssh" && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// An MPI job's first plan asks for its SSH Secret, under a name the API
// server picks, and creates no pod; the next records the name the
// controller was given; only a plan made from a status that names the
// Secret creates pods, and they mount it.
func TestMPIPodsWaitForTheirSSHSecret(t *testing.T) {
	w := mpiWorld(t)
	res := w.step()
	if len(res.CreatePods) > 0 {
		t.Fatalf("pods created before the job has an SSH Secret: %v", created(res))
	}
	s := res.CreateSSHSecret
	if s == nil || s.Name != "" || s.GenerateName != "mpi-ssh-" {
		t.Fatalf("the first plan asks for a Secret named by the API server, got %+v", s)
	}
	if res.RequeueAfter == 0 || res.RequeueAfter > sshSecretRecheck {
		t.Errorf("requeue after %s: the plan that records the name comes at once", res.RequeueAfter)
	}

	res = w.step()
	made := w.secrets[0]
	if len(res.CreatePods) > 0 || res.CreateSSHSecret != nil {
		t.Fatalf("the plan that records the Secret creates nothing: pods %v, Secret %v", created(res), res.CreateSSHSecret)
	}
	if got := w.job.Status.MPI.SSHSecretName; got != made {
		t.Fatalf("status.mpi.sshSecretName = %q, want %q", got, made)
	}

	res = w.step()
	if len(res.CreatePods) != 2 {
		t.Fatalf("with the Secret in status the workers are created, got %v", created(res))
	}
	for _, pod := range res.CreatePods {
		if got := sshSecretOf(pod); got != made {
			t.Errorf("%s mounts %q, want %q", pod.Name, got, made)
		}
	}
}

// Once status names the Secret, none is made again: not for the
// launcher, nor a restarted task, nor a new attempt, whose pods mount the
// same one. A Secret the controller still keeps (made by a reconcile whose
// status write was lost) does not replace it.
func TestMPISSHSecretIsMadeOnce(t *testing.T) {
	w := mpiWorld(t)
	w.job.Status.MPI.SSHSecretName = "mpi-ssh-k7x2p"
	w.secrets = []string{"mpi-ssh-orphan"}
	check := func(res Result) {
		t.Helper()
		if res.CreateSSHSecret != nil {
			t.Fatal("a second Secret is asked for while status names one")
		}
		for _, pod := range res.CreatePods {
			if got := sshSecretOf(pod); got != "mpi-ssh-k7x2p" {
				t.Fatalf("%s mounts %q, want the Secret status names", pod.Name, got)
			}
		}
		if got := w.job.Status.MPI.SSHSecretName; got != "mpi-ssh-k7x2p" {
			t.Fatalf("status.mpi.sshSecretName = %q", got)
		}
	}
	check(w.step())
	w.runEverything()
	check(w.step())
	// A worker fails: the whole job starts a new attempt (MPI's restart
	// scope), and every pod is made again.
	w.exit("mpi-worker-1", 137)
	for range 6 {
		check(w.step())
		w.runEverything()
	}
	if w.job.Status.Attempt != 1 || w.pods["mpi-worker-1"] == nil || w.pods["mpi-worker-1"].Labels[musterv1.LabelJobAttempt] != "1" {
		t.Fatalf("attempt %d, pods %v: want the new attempt's pods; %+v", w.job.Status.Attempt, w.podNames(), w.job.Status)
	}
}

// A job that does not run yet, or a job of another runtime, gets no Secret.
func TestSSHSecretOnlyForMPIJobsThatRun(t *testing.T) {
	w := mpiWorld(t)
	w.job.Spec.Run.Execution = musterv1.ExecutionSuspend
	if res := w.step(); res.CreateSSHSecret != nil {
		t.Error("a suspended MPI job asks for a Secret")
	}
	w = newWorld(t, testutil.MakeJob("j", "ns").UID("u").Role("worker", 2).WithDefaults().Obj())
	if res := w.step(); res.CreateSSHSecret != nil || len(res.CreatePods) != 2 {
		t.Errorf("a generic job: Secret %v, pods %v", res.CreateSSHSecret, created(res))
	}
}

// A job an earlier version started, whose pods mount the Secret of the name
// that version chose, keeps that Secret: the pods made from now on trust
// the key the running ones do.
func TestMPIJobOfAnEarlierVersionKeepsItsSecret(t *testing.T) {
	w := mpiWorld(t)
	w.job.Status.MPI.SSHSecretName = "earlier"
	w.step()
	w.step()
	w.runEverything()
	w.step()
	for _, pod := range w.pods {
		pod.Spec.Volumes[0].Secret.SecretName = "mpi-ssh-abcd1234"
	}
	w.job.Status.MPI.SSHSecretName = ""
	w.exit("mpi-launcher-0", 1)
	res := w.step()
	if res.CreateSSHSecret != nil || len(res.CreatePods) > 0 {
		t.Fatalf("Secret %v, pods %v: the earlier Secret is recorded first", res.CreateSSHSecret, created(res))
	}
	if got := w.job.Status.MPI.SSHSecretName; got != "mpi-ssh-abcd1234" {
		t.Fatalf("status.mpi.sshSecretName = %q, want the earlier Secret", got)
	}
}
