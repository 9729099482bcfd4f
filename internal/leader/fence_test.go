package leader

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// memLock is a lease in memory; each write takes took on the clock, and
// fails with err if set.
type memLock struct {
	clock *clocktesting.FakePassiveClock
	took  time.Duration
	err   error
	rec   resourcelock.LeaderElectionRecord
}

func (m *memLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r := m.rec
	return &r, nil, nil
}

func (m *memLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	return m.write(r)
}
func (m *memLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	return m.write(r)
}

func (m *memLock) write(r resourcelock.LeaderElectionRecord) error {
	m.clock.SetTime(m.clock.Now().Add(m.took))
	if m.err != nil {
		return m.err
	}
	m.rec = r
	return nil
}

func (m *memLock) RecordEvent(string) {}
func (m *memLock) Identity() string   { return "me" }
func (m *memLock) Describe() string   { return "mem" }

const deadline = 10 * time.Second

func newLock() (*Lock, *memLock, *clocktesting.FakePassiveClock) {
	c := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	m := &memLock{clock: c}
	return NewLock(m, deadline, c), m, c
}

func renew(t *testing.T, l *Lock, holder string) {
	t.Helper()
	if err := l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: holder}); err != nil {
		t.Fatal(err)
	}
}

// Writes are allowed from a renewal until the renew deadline after it
// began, on the clock that runs on while the process is paused.
func TestTheFenceClosesADeadlineAfterTheLastRenewalBegan(t *testing.T) {
	l, m, c := newLock()
	if err := l.Check(); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("before any lease: %v, want ErrNotLeading", err)
	}
	m.took = 3 * time.Second
	if err := l.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	// Counted from when the write began: 3 s already passed in it.
	c.SetTime(c.Now().Add(deadline - 3*time.Second - time.Millisecond))
	if err := l.Check(); err != nil {
		t.Fatalf("within the deadline: %v", err)
	}
	c.SetTime(c.Now().Add(time.Millisecond))
	if err := l.Check(); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("at the deadline: %v, want ErrNotLeading", err)
	}
	// A pause past the lease, then a renewal that fails (another holds
	// it): still closed.
	c.SetTime(c.Now().Add(20 * time.Second))
	m.err = errors.New("conflict")
	_ = l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	if err := l.Check(); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("after a failed renewal: %v, want ErrNotLeading", err)
	}
	m.err, m.took = nil, 0
	renew(t, l, "me")
	if err := l.Check(); err != nil {
		t.Fatalf("after a renewal: %v", err)
	}
	// Released: closed at once.
	renew(t, l, "")
	if err := l.Check(); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("after the release: %v, want ErrNotLeading", err)
	}
}

// A fenced client refuses every write while the fence is closed, status
// included, and reads on.
func TestAFencedClientRefusesWritesOnly(t *testing.T) {
	closed := ErrNotLeading
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	base := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).WithStatusSubresource(&corev1.Pod{}).Build()
	c := Fenced(base, func() (time.Duration, error) { return time.Minute, closed })
	ctx := context.Background()
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatalf("a read was refused: %v", err)
	}
	writes := map[string]func() error{
		"create": func() error {
			return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"}})
		},
		"update": func() error { return c.Update(ctx, got.DeepCopy()) },
		"patch":  func() error { return c.Patch(ctx, got.DeepCopy(), client.MergeFrom(&got)) },
		"delete": func() error { return c.Delete(ctx, got.DeepCopy()) },
		"status": func() error { return c.Status().Update(ctx, got.DeepCopy()) },
		"status patch": func() error {
			return c.SubResource("status").Patch(ctx, got.DeepCopy(), client.MergeFrom(&got))
		},
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrNotLeading) {
			t.Errorf("%s while fenced: %v, want ErrNotLeading", name, err)
		}
	}
	closed = nil
	for _, name := range []string{"update", "status", "status patch", "patch", "create", "delete"} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
			t.Fatal(err)
		}
		if err := writes[name](); err != nil {
			t.Errorf("%s while leading: %v", name, err)
		}
	}
}

// A write the fence allows must be done by the time the fence closes: it
// goes out with a context that ends then, so one checked a moment before
// the fence closes, or held up between the check and the request (a
// paused process, a slow API server), is not sent, nor waited on, once a
// standby may lead.
func TestAFencedWriteEndsWhenTheFenceCloses(t *testing.T) {
	l, _, c := newLock()
	renew(t, l, "me")
	c.SetTime(c.Now().Add(deadline - 50*time.Millisecond))
	left, err := l.Left()
	if err != nil || left != 50*time.Millisecond {
		t.Fatalf("left %v, %v: want 50ms", left, err)
	}
	var deadlines []time.Duration
	base := interceptor.NewClient(fake.NewClientBuilder().WithStatusSubresource(&corev1.Pod{}).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			d, ok := ctx.Deadline()
			if !ok {
				deadlines = append(deadlines, -1)
				return nil
			}
			deadlines = append(deadlines, time.Until(d))
			<-ctx.Done()
			return ctx.Err()
		},
	})
	fenced := Fenced(base, l.Left)
	start := time.Now()
	err = fenced.Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write held past the fence: %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the write was waited on for %s after the fence closed", took)
	}
	if len(deadlines) != 1 || deadlines[0] < 0 || deadlines[0] > 50*time.Millisecond {
		t.Fatalf("the write's context had deadlines %v, want one within the 50ms left", deadlines)
	}
}
