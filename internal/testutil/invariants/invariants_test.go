package invariants

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

var job = testutil.MakeJob("j", "ns").Role("w", 2).Obj()

// at is a pod with resourceVersion rv, created at second s.
func at(p *corev1.Pod, rv string, s int64) *corev1.Pod {
	p.ResourceVersion = rv
	p.CreationTimestamp = metav1.Unix(s, 0)
	return p
}

func finished(rv string, s int64) *musterv1.TrainingJob {
	j := job.DeepCopy()
	j.ResourceVersion = rv
	j.Status.CompletionTime = &metav1.Time{Time: time.Unix(s, 0)}
	return j
}

func wantViolations(t *testing.T, c *Checker, n int, about string) {
	t.Helper()
	got := c.Violations()
	if len(got) != n {
		t.Fatalf("want %d violations, got %d: %q", n, len(got), got)
	}
	for _, v := range got {
		if !strings.Contains(v, about) {
			t.Errorf("violation %q does not say %q", v, about)
		}
	}
}

// A replacement that runs while the old instance is still being deleted,
// gracefully, breaks the first invariant, whatever the two pods are
// called.
func TestAReplacementBesideADeletingInstanceIsCaught(t *testing.T) {
	c := New()
	old := testutil.MakePod(job, "w", 0).Running().Obj()
	c.Added(old)
	c.Pod(testutil.MakePod(job, "w", 0).Running().Deleting().Obj())
	replacement := testutil.MakePod(job, "w", 0).Attempt(2).Obj()
	replacement.Name += "-a2"
	c.Added(replacement)
	wantViolations(t, c, 1, "task j/w/0 has 2 pods")
}

// A replacement made once the old instance ended, or was gone, breaks
// nothing; nor do two tasks running side by side.
func TestAReplacementAfterTheEndIsFine(t *testing.T) {
	c := New()
	c.Added(testutil.MakePod(job, "w", 0).Running().Obj())
	c.Added(testutil.MakePod(job, "w", 1).Running().Obj())
	c.Pod(testutil.MakePod(job, "w", 0).Exited(1, "Error", time.Unix(5, 0)).Deleting().Obj())
	c.Added(testutil.MakePod(job, "w", 0).Attempt(2).Obj())
	c.Pod(testutil.MakePod(job, "w", 1).Running().Deleting().Obj())
	c.Gone(testutil.MakePod(job, "w", 1).Obj())
	c.Added(testutil.MakePod(job, "w", 1).Attempt(2).Obj())
	wantViolations(t, c, 0, "")
	if got := c.PodsCreated("j"); got != 4 {
		t.Errorf("PodsCreated = %d, want 4", got)
	}
}

// A pod created after its job finished is caught by the store's order,
// within the second the job finished in.
func TestAPodCreatedAfterTheJobFinishedIsCaught(t *testing.T) {
	c := New()
	c.Job(finished("100", 50))
	c.Added(at(testutil.MakePod(job, "w", 0).Obj(), "101", 50))
	wantViolations(t, c, 1, "created after job j finished")
}

// A pod seen for the first time after the job finished, but created
// before (a watch listed again), is not a breach: it was bound since, so
// its resourceVersion is not its creation's.
func TestAnOlderPodSeenLateIsFine(t *testing.T) {
	c := New()
	c.Job(finished("100", 50))
	late := at(testutil.MakePod(job, "w", 0).Running().Obj(), "140", 49)
	late.Spec.NodeName = "n"
	c.Added(late)
	c.Added(at(testutil.MakePod(job, "w", 1).Obj(), "90", 49))
	wantViolations(t, c, 0, "")
}

// The job's first finished observation is the mark: a later write to the
// finished job does not move it.
func TestTheFinishMarkIsTheFirstSeen(t *testing.T) {
	c := New()
	c.Job(finished("100", 50))
	c.Job(finished("200", 50))
	c.Added(at(testutil.MakePod(job, "w", 0).Obj(), "150", 50))
	wantViolations(t, c, 1, "resourceVersion 100")
}
