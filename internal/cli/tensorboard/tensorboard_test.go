package tensorboard

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
)

func job(reason string, status metav1.ConditionStatus) *musterv1.TrainingJob {
	j := testutil.MakeJob("pet", "team").Role("worker", 1).TensorBoard("", -1).Obj()
	if reason != "" {
		apimeta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: string(musterv1.ConditionTensorBoardReady),
			Status: status, Reason: reason, Message: "message of " + reason})
	}
	return j
}

func pod(name string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: map[string]string{objects.LabelTensorBoard: "pet"}}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

// forwarder records what it was asked to forward to.
type forwarder struct {
	mu  sync.Mutex
	pod string
}

func (f *forwarder) forward(_ context.Context, pod *corev1.Pod, address string, local int, ready func(uint16)) error {
	f.mu.Lock()
	f.pod = pod.Name
	f.mu.Unlock()
	ready(uint16(local))
	return nil
}

func (f *forwarder) forwardedTo() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pod
}

// A ready TensorBoard is forwarded to through its ready pod.
func TestForwardsToTheReadyPod(t *testing.T) {
	fw := &forwarder{}
	f := clitest.NewFactory(clitest.Options{}, job(string(musterv1.ReasonReady), metav1.ConditionTrue), pod("pet-tb-a", false), pod("pet-tb-b", true))
	r := clitest.Run(t, NewCmdForwarding(fw.forward), f, "pet", "--port", "7007")
	if r.Error != nil {
		t.Fatalf("error %v\nstderr %s", r.Error, r.Err)
	}
	if fw.forwardedTo() != "pet-tb-b" || r.Out != "TensorBoard of trainingjob.muster.dev/pet: http://127.0.0.1:7007\n" {
		t.Fatalf("forwarded to %q, out %q", fw.forwardedTo(), r.Out)
	}
}

// A starting TensorBoard is waited for, saying so, and the watch brings
// the news that it is ready.
func TestWaitsForTheTensorBoard(t *testing.T) {
	fw := &forwarder{}
	watching := make(chan struct{})
	f := clitest.NewFactory(clitest.Options{Intercept: &interceptor.Funcs{
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			w, err := c.Watch(ctx, list, opts...)
			close(watching)
			return w, err
		},
	}}, job(string(musterv1.ReasonStarting), metav1.ConditionFalse), pod("pet-tb", true))
	updated := make(chan error, 1)
	go func() {
		<-watching
		live := &musterv1.TrainingJob{}
		if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "pet"}, live); err != nil {
			updated <- err
			return
		}
		live.Status = job(string(musterv1.ReasonReady), metav1.ConditionTrue).Status
		updated <- f.Jobs.Status().Update(context.Background(), live)
	}()
	r := clitest.Run(t, NewCmdForwarding(fw.forward), f, "pet", "--timeout", "10s")
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	if r.Error != nil || fw.forwardedTo() != "pet-tb" {
		t.Fatalf("error %v, forwarded to %q\nstderr %s", r.Error, fw.forwardedTo(), r.Err)
	}
	if r.Err != "waiting for the TensorBoard of trainingjob.muster.dev/pet: message of Starting\n" {
		t.Fatalf("stderr %q", r.Err)
	}
}

// What can never become ready is an error that says what to do; what may
// is waited for until --timeout.
func TestTensorBoardErrors(t *testing.T) {
	noTensorBoard := job("", "")
	noTensorBoard.Spec.TensorBoard = musterv1.TensorBoard{}
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		args []string
		want string
	}{
		"no spec.tensorboard": {noTensorBoard, nil, "trainingjob.muster.dev/pet has no spec.tensorboard: add one"},
		"removed after its TTL": {job(string(musterv1.ReasonTTLExpired), metav1.ConditionFalse), nil,
			"the TensorBoard of trainingjob.muster.dev/pet is gone: message of TTLExpired"},
		"an invalid spec": {job(string(musterv1.ReasonInvalidSpec), metav1.ConditionFalse), nil,
			"cannot be made: message of InvalidSpec"},
		"blocked past the timeout": {job(string(musterv1.ReasonNameTaken), metav1.ConditionFalse), []string{"--timeout", "200ms"},
			"is not ready after 200ms (message of NameTaken): `muster describe pet` shows its condition"},
		"a bad port": {job(string(musterv1.ReasonReady), metav1.ConditionTrue), []string{"--port", "70000"}, "--port 70000"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fw := &forwarder{}
			r := clitest.Run(t, NewCmdForwarding(fw.forward), clitest.NewFactory(clitest.Options{}, tc.job), append([]string{"pet"}, tc.args...)...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", r.Error, tc.want)
			}
			if fw.forwardedTo() != "" {
				t.Fatalf("forwarded to %q", fw.forwardedTo())
			}
		})
	}
	r := clitest.Run(t, NewCmdForwarding((&forwarder{}).forward), clitest.NewFactory(clitest.Options{}), "nope")
	if r.Error == nil || !strings.Contains(r.Error.Error(), "trainingjob team/nope not found") {
		t.Fatalf("a missing job: %v", r.Error)
	}
}
