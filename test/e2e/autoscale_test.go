package e2e

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// Under torchrun, rank 0 reports a job-wide throughput that grows with the
// world up to 2 workers and then stops growing.
const plateau = `
import os, time
world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
while True:
    if rank == 0:
        print(f"world={world} throughput={min(world, 2) * 100.0}", flush=True)
    time.sleep(1)
`

// The autoscaler explores 1 -> 2 -> 3 workers, finds that the third does
// not pay off, goes back to 2 and stops there.
func TestAutoscalerFindsTheBestSize(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	job := testutil.MakeJob("auto", ns).Role("worker", 1).Elastic(1, 3).RestartPolicy(musterv1.RestartPolicyOnFailure).
		Template(func(p *corev1.PodTemplateSpec) {
			python(plateau)(p)
			p.Spec.Containers[0].Command = []string{"torchrun", "--no_python", "/usr/bin/python3", "-c", plateau}
		}).Obj()
	job.Spec.Scaling.Autoscaling = musterv1.AutoscalingPolicy{
		Metric:         musterv1.ThroughputMetric{LogRegex: `throughput=([0-9.]+)`},
		SamplesPerSize: 2, SettleSeconds: new(int32(8)), IntervalSeconds: 2,
	}
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())
	got := framework.WaitJob(g, c, ns, "auto", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Autoscaler).NotTo(gomega.BeNil())
		g.Expect(j.Status.Autoscaler.Phase).To(gomega.Equal("Stopped"), "autoscaler: %+v", j.Status.Autoscaler)
		// The decision is written before the job is scaled back to it.
		g.Expect(*j.Spec.Scaling.Replicas).To(gomega.Equal(j.Status.Autoscaler.LastGood))
	})
	a := got.Status.Autoscaler
	g.Expect(a.Reason).To(gomega.Equal("NoGain"), "autoscaler: %+v", a)
	g.Expect(a.LastGood).To(gomega.Equal(int32(2)))
	g.Expect(*got.Spec.Scaling.Replicas).To(gomega.Equal(int32(2)))
	var sizes []int32
	for _, s := range a.Sizes {
		sizes = append(sizes, s.Replicas)
	}
	g.Expect(sizes).To(gomega.Equal([]int32{1, 2, 3}))
	g.Expect(a.Sizes[1].Throughput).To(gomega.Equal("200"))
	framework.WaitJob(g, c, ns, "auto", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Ready).To(gomega.Equal("2/2"))
	})
}
