package leader

import (
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Timing is the leader election's: a standby takes a lease left unrenewed
// for LeaseDuration; the leader gives up when it could not renew for
// RenewDeadline, and tries every RetryPeriod. The fence allows writes for
// RenewDeadline after each renewal began.
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultTiming is Kubernetes' components' and controller-runtime's.
var DefaultTiming = Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// NewLeaseLock is the fenced Lease lock namespace/name for a replica of
// its own identity (host name and a random suffix, so two processes on
// one host differ). stop ends its event recording.
func NewLeaseLock(cfg *rest.Config, namespace, name string, t Timing) (lock *Lock, stop func(), err error) {
	if t.RenewDeadline >= t.LeaseDuration {
		return nil, nil, fmt.Errorf("the renew deadline (%s) must be shorter than the lease duration (%s)", t.RenewDeadline, t.LeaseDuration)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, nil, err
	}
	id := host + "_" + string(uuid.NewUUID())
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// One hung request must not cost the lease.
	cfg.Timeout = max(t.RenewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	rl, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: id})})
	if err != nil {
		events.Shutdown()
		return nil, nil, err
	}
	return NewLock(rl, t.RenewDeadline, clock.RealClock{}), events.Shutdown, nil
}
