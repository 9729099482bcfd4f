package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func phaseJob(name, ns string, phase musterv1.JobPhase) *musterv1.TrainingJob {
	return &musterv1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status:     musterv1.TrainingJobStatus{Phase: phase},
	}
}

// gatherJobs scrapes c alone and returns muster_jobs by phase, or nil when
// it reports no series.
func gatherJobs(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]float64
	for _, mf := range mfs {
		if mf.GetName() != "muster_jobs" {
			t.Fatalf("unexpected metric %s", mf.GetName())
		}
		got = map[string]float64{}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "phase" {
				t.Fatalf("labels %v, want phase only", m.GetLabel())
			}
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return got
}

func TestJobGauge(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := musterv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		phaseJob("new", "a", ""), // no status yet
		phaseJob("p", "a", musterv1.PhasePending),
		phaseJob("r1", "a", musterv1.PhaseRunning),
		phaseJob("r2", "b", musterv1.PhaseRunning),
		phaseJob("r3", "b", musterv1.PhaseRunning),
		phaseJob("f", "b", musterv1.PhaseFailed),
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&musterv1.TrainingJob{}).Build()

	c := &jobCollector{}
	if got := gatherJobs(t, c); got != nil {
		t.Errorf("without a source: %v, want no series", got)
	}

	elected := make(chan struct{})
	c.setSource(reader, elected)
	if got := gatherJobs(t, c); got != nil {
		t.Errorf("on standby: %v, want no series", got)
	}

	close(elected)
	want := map[string]float64{"Pending": 2, "Running": 3, "Restarting": 0, "Suspended": 0, "Succeeded": 0, "Failed": 1}
	got := gatherJobs(t, c)
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("phase %s: %v, want %v", p, got[p], v)
		}
	}

	// A failed read leaves the series out of that scrape, and fails
	// nothing else.
	failing := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return errors.New("cache unavailable")
		},
	}).Build()
	c.setSource(failing, elected)
	if got := gatherJobs(t, c); got != nil {
		t.Errorf("after a failed read: %v, want no series", got)
	}
}
