package integration

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// A job's program reports its progress (a fake program: an HTTP server at
// the address the task's pod shows, on the port the pod is told); the
// operator reads it into status.progress, once per interval, from the pod
// that serves it.
func TestProgressReportsReachStatus(t *testing.T) {
	e := newEnv(t)
	// Worker 1's address serves the report; worker 0's serves none.
	l, err := net.Listen("tcp", "127.0.0.3:0")
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	var reads atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := reads.Add(1)
		if r.URL.Path != "/progress" {
			http.NotFound(w, r)
			return
		}
		_, _ = fmt.Fprintf(w, `{"step": %d, "totalSteps": 200, "samplesPerSecond": 812.5, "metrics": {"loss": 0.25}}`, 50*n)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	e.create(e.job("prog").Role("worker", 2).Progress(int32(port), 0).Obj())
	pods := e.waitPodCount("prog", 2)
	for _, pod := range pods {
		want := corev1.EnvVar{Name: musterv1.EnvProgressPort, Value: strconv.Itoa(port)}
		e.g.Expect(pod.Spec.Containers[0].Env).To(gomega.ContainElement(want), "pod %s is not told its progress port", pod.Name)
	}
	// The reporter starts first: a read that asks only worker 0, which
	// has no report, would be the interval's.
	e.setStatus(e.pod("prog-worker-1"), corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.3"})
	e.setStatus(e.pod("prog-worker-0"), corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.2"})
	got := e.eventuallyJob("prog", func(g gomega.Gomega, j *musterv1.TrainingJob) {
		p := j.Status.Progress
		g.Expect(p).NotTo(gomega.BeNil())
		g.Expect(p.Reporter).To(gomega.Equal("prog-worker-1"))
	})
	p := got.Status.Progress
	e.g.Expect(*p.Step).To(gomega.Equal(int64(50)))
	e.g.Expect(*p.Percent).To(gomega.Equal(int32(25)))
	e.g.Expect(p.SamplesPerSecond).To(gomega.Equal("812.5"))
	e.g.Expect(p.Metrics).To(gomega.Equal([]musterv1.ProgressMetric{{Name: "loss", Value: "0.25"}}))
	e.g.Expect(p.LastProgressTime).NotTo(gomega.BeNil())
	// One read per interval (30 s): the pod events and status writes of
	// the job meanwhile read nothing more.
	e.g.Consistently(reads.Load, "3s", interval).Should(gomega.Equal(int32(1)))
}
