package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// A 10,000-task job is stored and kept by the real API server, and its
// status stays well under 1 MiB while its tasks start, while 2,000 of them
// fail at once and are restarted, and once they run again.
func TestTenThousandTaskJob(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10,000 pods")
	}
	const n, failing = 10000, 2000
	e := newEnv(t)
	e.create(e.job("big").Role("worker", n).RestartPolicy(musterv1.RestartPolicyOnFailure).BackoffLimit(n).Obj())
	// Every read of the job, while it starts, fails and recovers, is
	// measured; the largest must stay well under the 1 MiB an object may
	// take in practice.
	largest := 0
	size := func(g gomega.Gomega) *musterv1.TrainingJob {
		job := &musterv1.TrainingJob{}
		g.Expect(k8s.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "big"}, job)).To(gomega.Succeed())
		b, err := json.Marshal(job)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		largest = max(largest, len(b))
		return job
	}
	long := 3 * time.Minute
	var pods corev1.PodList
	e.g.Eventually(func(g gomega.Gomega) {
		size(g)
		g.Expect(k8s.List(e.ctx(), &pods, client.InNamespace(e.ns), client.MatchingLabels{musterv1.LabelJobName: "big"})).To(gomega.Succeed())
		g.Expect(pods.Items).To(gomega.HaveLen(n), "every task has its pod")
	}, long, time.Second).Should(gomega.Succeed())
	set := func(count int, status func(int) corev1.PodStatus) {
		workqueue.ParallelizeUntil(context.Background(), 16, count, func(i int) {
			pod := pods.Items[i].DeepCopy()
			patch := client.MergeFrom(pod.DeepCopy())
			pod.Status = status(i)
			e.g.Expect(k8s.Status().Patch(context.Background(), pod, patch)).To(gomega.Succeed())
		})
	}
	set(n, func(int) corev1.PodStatus { return corev1.PodStatus{Phase: corev1.PodRunning} })
	e.g.Eventually(func(g gomega.Gomega) {
		g.Expect(size(g).Status.Ready).To(gomega.Equal("10000/10000"))
	}, long, time.Second).Should(gomega.Succeed())

	set(failing, func(int) corev1.PodStatus { return testutil.ExitedStatus(1, "Error", time.Now()) })
	e.g.Eventually(func(g gomega.Gomega) {
		job := size(g)
		g.Expect(job.Status.Restarts.Total).To(gomega.Equal(int32(failing)), "every failure counted once")
		g.Expect(job.Status.Roles[0].Pending).To(gomega.Equal(int32(failing)), "every failed task has its replacement")
	}, long, time.Second).Should(gomega.Succeed())
	t.Logf("largest job object seen: %d bytes", largest)
	e.g.Expect(largest).To(gomega.BeNumerically("<", 512<<10), "the job object stays well under 1 MiB")
}
