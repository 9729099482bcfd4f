package framework

import (
	"context"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// JobPoll is how often WaitJob reads the job: on a real cluster the
// kubelet and the operator take longer than that to move a job on, and
// reading it more often only loads the API server they share.
const JobPoll = 500 * time.Millisecond

// JobCheck is what a job must show for a wait to end; it fails through g
// while the job does not show it yet.
type JobCheck func(g gomega.Gomega, job *musterv1.TrainingJob)

// WaitJob waits until check passes on the job, and returns the job as it
// passed.
func WaitJob(g gomega.Gomega, c client.Reader, ns, name string, timeout time.Duration, check JobCheck) *musterv1.TrainingJob {
	return WaitJobEvery(g, c, ns, name, timeout, JobPoll, check)
}

// WaitJobEvery is WaitJob reading the job every poll: an operator on
// envtest acts within milliseconds.
func WaitJobEvery(g gomega.Gomega, c client.Reader, ns, name string, timeout, poll time.Duration, check JobCheck) *musterv1.TrainingJob {
	job := &musterv1.TrainingJob{}
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job)).To(gomega.Succeed())
		check(g, job)
	}, timeout, poll).Should(gomega.Succeed())
	return job
}

// PhaseIs checks the job's phase, and shows its status when it differs.
func PhaseIs(phase musterv1.JobPhase) JobCheck {
	return func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.Equal(phase), "status: %+v", j.Status)
	}
}
