// Package leader fences the operator's writes to the time it is sure to
// lead.
//
// Leader election alone does not stop a leader that was paused (a stopped
// process, a frozen VM, a long GC or swap) from acting when it wakes: its
// queued work runs at once, while the elector notices only at its next
// renewal that another replica took the lease meanwhile. A write made then
// races the new leader's, and can count a restart twice or make a pod the
// new leader does not know of.
//
// The fence is the one thing both replicas agree on without talking: a
// standby takes the lease only after it has seen the lease unrenewed for
// the whole lease duration, counted from after the leader's last renewal
// began. So a leader whose last successful renewal began less than the
// lease duration ago still leads. The fence allows writes only until the
// renew deadline (shorter, and the point at which the elector itself gives
// up) has passed since that renewal began, measured on the monotonic
// clock, which runs on while a process is stopped.
package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNotLeading is returned for a write the fence refused.
var ErrNotLeading = errors.New("not sure to lead: the last lease renewal is too old")

// Lock is a resourcelock.Interface that notes when each renewal it made
// began, and fences writes by it.
type Lock struct {
	resourcelock.Interface
	// deadline is how long after a renewal began writes are allowed.
	deadline time.Duration
	clock    clock.PassiveClock

	mu sync.Mutex
	// renewed is when the last successful renewal by this replica
	// began; zero when it does not hold the lease.
	renewed time.Time
}

// NewLock fences writes to deadline after each renewal of lock begins:
// the leader election's renew deadline, which must be shorter than its
// lease duration.
func NewLock(lock resourcelock.Interface, deadline time.Duration, c clock.PassiveClock) *Lock {
	return &Lock{Interface: lock, deadline: deadline, clock: c}
}

// Create takes the lease.
func (l *Lock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	began := l.clock.Now()
	err := l.Interface.Create(ctx, rec)
	l.note(began, rec, err)
	return err
}

// Update renews, takes or releases the lease.
func (l *Lock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	began := l.clock.Now()
	err := l.Interface.Update(ctx, rec)
	l.note(began, rec, err)
	return err
}

func (l *Lock) note(began time.Time, rec resourcelock.LeaderElectionRecord, err error) {
	if err != nil {
		// A failed write proves nothing: the last renewal stands.
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec.HolderIdentity == l.Identity() {
		l.renewed = began
	} else {
		// Released (an empty holder) or written for another.
		l.renewed = time.Time{}
	}
}

// Check returns nil while writes are allowed, else ErrNotLeading.
func (l *Lock) Check() error {
	_, err := l.Left()
	return err
}

// Left is how much longer writes are allowed, measured on the monotonic
// clock from the last renewal's start, or ErrNotLeading once they are not.
func (l *Lock) Left() (time.Duration, error) {
	l.mu.Lock()
	renewed := l.renewed
	l.mu.Unlock()
	if renewed.IsZero() {
		return 0, ErrNotLeading
	}
	age := l.clock.Since(renewed)
	if age >= l.deadline {
		return 0, fmt.Errorf("%w (began %s ago, writes allowed for %s)", ErrNotLeading, age.Round(time.Millisecond), l.deadline)
	}
	return l.deadline - age, nil
}

// Fence is how long writes are still allowed, or why none is (Lock.Left).
type Fence func() (time.Duration, error)

// Fenced wraps c so that every write first asks fence, and is refused
// with its error; reads pass. A write allowed goes out with a context
// that ends when the fence closes: one checked a moment before the fence
// closes, or made by a process paused between the check and the write,
// is never sent once it has closed, nor waited on past it. A nil fence
// returns c.
func Fenced(c client.Client, fence Fence) client.Client {
	if fence == nil {
		return c
	}
	return &fenced{Client: c, fence: fence}
}

// writeContext is what a write the fence allows goes out with: ctx,
// bounded by the time left, and its cancel; or the fence's error.
func (fence Fence) writeContext(ctx context.Context) (context.Context, context.CancelFunc, error) {
	left, err := fence()
	if err != nil {
		return ctx, func() {}, err
	}
	ctx, cancel := context.WithTimeout(ctx, left)
	return ctx, cancel, nil
}

type fenced struct {
	client.Client
	fence Fence
}

func (f *fenced) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.Client.Create(ctx, obj, opts...)
}

func (f *fenced) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.Client.Update(ctx, obj, opts...)
}

func (f *fenced) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.Client.Patch(ctx, obj, patch, opts...)
}

func (f *fenced) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.Client.Apply(ctx, obj, opts...)
}

func (f *fenced) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.Client.Delete(ctx, obj, opts...)
}

func (f *fenced) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.Client.DeleteAllOf(ctx, obj, opts...)
}

func (f *fenced) Status() client.SubResourceWriter {
	return &fencedSub{SubResourceClient: f.Client.SubResource("status"), fence: f.fence}
}

func (f *fenced) SubResource(name string) client.SubResourceClient {
	return &fencedSub{SubResourceClient: f.Client.SubResource(name), fence: f.fence}
}

type fencedSub struct {
	client.SubResourceClient
	fence Fence
}

func (f *fencedSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (f *fencedSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.SubResourceClient.Update(ctx, obj, opts...)
}

func (f *fencedSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (f *fencedSub) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	ctx, cancel, err := f.fence.writeContext(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return f.SubResourceClient.Apply(ctx, obj, opts...)
}

// FencedRecorder drops the events r would record while fence refuses
// writes: a replica that is not sure to lead has nothing to report.
func FencedRecorder(r events.EventRecorder, fence Fence) events.EventRecorder {
	if fence == nil {
		return r
	}
	return fencedRecorder{r, fence}
}

type fencedRecorder struct {
	events.EventRecorder
	fence Fence
}

func (f fencedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if _, err := f.fence(); err == nil {
		f.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
}
