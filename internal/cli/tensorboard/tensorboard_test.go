package tensorboard

import (
	"context"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
)

func job(reason string, status metav1.ConditionStatus) *musterv1.TrainingJob {
	j := testutil.MakeJob("pet", "team").UID("pet-uid").Role("worker", 1).TensorBoard("", -1).Obj()
	if reason != "" {
		apimeta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: string(musterv1.ConditionTensorBoardReady),
			Status: status, Reason: reason, Message: "message of " + reason})
	}
	return j
}

// tensorBoard is the Deployment the operator makes for the job, and its
// ReplicaSet, whose pods pod makes.
func tensorBoard() []runtime.Object {
	j := job("", "")
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: objects.TensorBoardName(j), Namespace: "team", UID: "dep-uid",
		OwnerReferences: []metav1.OwnerReference{objects.OwnerReference(j)}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: objects.TensorBoardName(j) + "-5d8f", Namespace: "team", UID: "rs-uid",
		Labels:          map[string]string{objects.LabelTensorBoard: "pet"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))}}}
	return []runtime.Object{dep, rs}
}

func pod(name string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: map[string]string{objects.LabelTensorBoard: "pet"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "pet-tensorboard-5d8f", UID: "rs-uid", Controller: new(true)}}}}
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
	// A pod anyone labelled as the TensorBoard is not forwarded to.
	impostor := pod("pet-tb-0", true)
	impostor.OwnerReferences = nil
	objs := append(tensorBoard(), job(string(musterv1.ReasonReady), metav1.ConditionTrue), impostor, pod("pet-tb-a", false), pod("pet-tb-b", true))
	f := clitest.NewFactory(clitest.Options{}, objs...)
	r := clitest.Run(t, NewCmdForwarding(fw.forward), f, "pet", "--port", "7007")
	if r.Error != nil {
		t.Fatalf("error %v\nstderr %s", r.Error, r.Err)
	}
	if fw.forwardedTo() != "pet-tb-b" || r.Out != "TensorBoard of trainingjob.muster.dev/pet: http://127.0.0.1:7007\n" {
		t.Fatalf("forwarded to %q, out %q", fw.forwardedTo(), r.Out)
	}
}

// The printed URL reaches the forward's local end, IPv6 too.
func TestNetJoin(t *testing.T) {
	for address, want := range map[string]string{
		"": "127.0.0.1:6006", "0.0.0.0": "127.0.0.1:6006", "10.0.0.5": "10.0.0.5:6006",
		"::": "[::1]:6006", "::1": "[::1]:6006", "fd00::5": "[fd00::5]:6006",
	} {
		if got := netJoin(address, 6006); got != want {
			t.Errorf("netJoin(%q) = %q, want %q", address, got, want)
		}
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
	}}, append(tensorBoard(), job(string(musterv1.ReasonStarting), metav1.ConditionFalse), pod("pet-tb", true))...)
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
