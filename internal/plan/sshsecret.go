package plan

import (
	"cmp"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// sshSecretRecheck is how soon a plan that asked for the job's SSH Secret
// is made again, to record the name the API server gave it.
const sshSecretRecheck = 100 * time.Millisecond

// awaitSSHSecret holds the pods of an MPI job that runs until the status
// the plan started from, the one last written, names the job's SSH Secret:
// every pod mounts it, and reads its name there, as it reads its attempt
// (objects.DesiredPod). So no pod is ever made before the status that names
// its Secret is written.
//
// The API server names the Secret (metadata.generateName), and the operator
// may create Secrets but not read them: made is the one the controller
// made for the job that no written status names yet, which this plan
// records. Without one, the plan asks for a Secret. Only a job that runs
// gets one: a job held, suspended or finished before it ever ran gets none.
// Once the status names a Secret, no other is made: a restarted task and a
// new attempt mount the same.
//
// A job an earlier version started has pods that mount the Secret of the
// name that version chose (objects.LegacyMPISSHSecret): that Secret is
// recorded, so that the pods made from now on trust the same key as those
// that run.
func awaitSSHSecret(c *planContext, pods []*corev1.Pod, made string, st *musterv1.TrainingJobStatus, out *Result) {
	if !objects.UsesSSHSecret(c.job) || c.job.Status.MPI.SSHSecretName != "" || isFinished(st) {
		return
	}
	out.CreatePods = nil
	if made = cmp.Or(made, legacySSHSecret(c.job, pods)); made != "" {
		st.MPI.SSHSecretName = made
		return
	}
	out.CreateSSHSecret = objects.MPISSHSecret(c.job)
	out.RequeueWithin(sshSecretRecheck)
}

// legacySSHSecret is the SSH Secret an earlier version made for job, as
// its pods mount it, or "".
func legacySSHSecret(job *musterv1.TrainingJob, pods []*corev1.Pod) string {
	for _, pod := range pods {
		if name := objects.LegacyMPISSHSecret(job, pod); name != "" {
			return name
		}
	}
	return ""
}
