package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/internal/trainingprogress"
)

// progressPods serves a body (empty: 404) at /progress from one loopback
// address per pod, all on the same port as a job's pods are, and counts
// the requests each gets.
type progressPods struct {
	port  int32
	mu    sync.Mutex
	asked map[string]int
	pods  []*corev1.Pod
}

func serveProgress(t *testing.T, bodies map[string]string) *progressPods {
	t.Helper()
	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := first.Addr().(*net.TCPAddr).Port
	_ = first.Close()
	s := &progressPods{port: int32(port), asked: map[string]int{}}
	i := 2
	for name, body := range bodies {
		ip := fmt.Sprintf("127.0.0.%d", i)
		i++
		l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.asked[name]++
			s.mu.Unlock()
			if body == "" || r.URL.Path != progressPath {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(body))
		})}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
		s.pods = append(s.pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{musterv1.LabelRole: "worker"}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
		})
	}
	return s
}

func (s *progressPods) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[name]
}

func (s *progressPods) job(reporter string) *musterv1.TrainingJob {
	job := &musterv1.TrainingJob{Spec: musterv1.TrainingJobSpec{Progress: &musterv1.Progress{Port: s.port, IntervalSeconds: 30}}}
	if reporter != "" {
		job.Status.Progress = &musterv1.ProgressStatus{Reporter: reporter}
	}
	return job
}

func TestProgressReaderAsksTheLastReporterFirst(t *testing.T) {
	s := serveProgress(t, map[string]string{"j-worker-0": `{"step": 1}`, "j-worker-1": `{"step": 9}`, "j-worker-2": ""})
	r := &httpProgressReader{http: newMetricsClient()}

	// No reporter yet: every pod is asked, the first by name that has a
	// report wins.
	read, _ := r.Read(context.Background(), s.job(""), s.pods)
	if read == nil || read.Reporter != "j-worker-0" || *read.Report.Step != 1 {
		t.Fatalf("first read: %+v", read)
	}
	for _, name := range []string{"j-worker-0", "j-worker-1", "j-worker-2"} {
		if s.count(name) != 1 {
			t.Fatalf("%s asked %d times: each pod once", name, s.count(name))
		}
	}
	// The last reporter answers: no other pod is asked.
	read, _ = r.Read(context.Background(), s.job("j-worker-1"), s.pods)
	if read == nil || read.Reporter != "j-worker-1" || *read.Report.Step != 9 || s.count("j-worker-0") != 1 || s.count("j-worker-2") != 1 {
		t.Fatalf("read %+v, others asked again", read)
	}
	// The last reporter has none any more (its rank moved): the others
	// are asked.
	read, _ = r.Read(context.Background(), s.job("j-worker-2"), s.pods)
	if read == nil || read.Reporter != "j-worker-0" {
		t.Fatalf("after the reporter lost its rank: %+v", read)
	}
}

func TestProgressReaderTellsAnUnreadableAnswer(t *testing.T) {
	s := serveProgress(t, map[string]string{"j-worker-0": `{"step": -4}`, "j-worker-1": `not json`})
	read, _ := (&httpProgressReader{http: newMetricsClient()}).Read(context.Background(), s.job(""), s.pods)
	if read == nil || read.Report != nil || !strings.Contains(read.Unreadable, "j-worker-0") || !strings.Contains(read.Unreadable, "step: -4") {
		t.Fatalf("read %+v", read)
	}
	// Pods that are not running, or not a task's, are not asked.
	for _, p := range s.pods {
		p.Status.Phase = corev1.PodPending
	}
	if read, asked := (&httpProgressReader{http: newMetricsClient()}).Read(context.Background(), s.job(""), s.pods); read != nil || asked {
		t.Fatalf("pending pods were read: %+v, asked %v", read, asked)
	}
}

// blockingReader is a progress read that takes until the test lets it
// finish, as a pod behind a default-deny NetworkPolicy does until the
// read's deadline.
type blockingReader struct {
	release chan struct{}
	step    int64
}

func (b *blockingReader) Read(ctx context.Context, _ *musterv1.TrainingJob, _ []*corev1.Pod) (*plan.ProgressRead, bool) {
	<-b.release
	return &plan.ProgressRead{Report: &trainingprogress.Report{Step: &b.step}, Reporter: "j-worker-0"}, true
}

// A progress read runs outside Reconcile: a reconcile returns while the
// read still waits on its pods, the read's end wakes the job, and the
// next reconcile writes what it read. Read inside Reconcile, as before,
// the first reconcile would wait for the read.
func TestAProgressReadHoldsNoReconcile(t *testing.T) {
	reader := &blockingReader{release: make(chan struct{}), step: 7}
	job := testutil.MakeJob("j", "ns").Role("worker", 1).Progress(musterv1.DefaultProgressPort, 0).Obj()
	h := newHarness(t, job, interceptor.Funcs{}, Options{Progress: reader})
	returned := make(chan error, 1)
	go func() {
		_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key})
		returned <- err
	}()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(reader.release)
		t.Fatal("Reconcile waited for the progress read")
	}
	close(reader.release)
	select {
	case e := <-h.r.wake:
		if e.Object.GetName() != "j" || e.Object.GetNamespace() != "ns" {
			t.Fatalf("woke %s/%s", e.Object.GetNamespace(), e.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the finished read did not wake the job")
	}
	if _, err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if p := h.job().Status.Progress; p == nil || p.Step == nil || *p.Step != 7 || p.Reporter != "j-worker-0" {
		t.Fatalf("the read did not reach status: %+v", p)
	}
}
