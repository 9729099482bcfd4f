package controller

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/testutil"
)

// mpiJob is an MPI job whose status names the SSH Secret secret, or none.
func mpiJob(secret string) *musterv1.TrainingJob {
	job := testutil.MakeJob("j", "ns").UID("j-uid").Runtime(musterv1.Runtime{MPI: &musterv1.MPIRuntime{}}).
		Role("worker", 2).Role("launcher", 1).WithDefaults().Obj()
	job.Status.MPI.SSHSecretName = secret
	return job
}

// secretCreates records the Secrets the operator asks the API server to
// create, as asked: name and generateName.
type secretCreates struct {
	mu    sync.Mutex
	asked []metav1.ObjectMeta
}

func (s *secretCreates) funcs() interceptor.Funcs {
	return interceptor.Funcs{Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
		if sec, ok := obj.(*corev1.Secret); ok {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.asked = append(s.asked, *sec.ObjectMeta.DeepCopy())
		}
		return nil
	}}
}

func (s *secretCreates) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asked)
}

// secrets are the Secrets there are in the namespace.
func (h *harness) secrets() []corev1.Secret {
	h.t.Helper()
	var list corev1.SecretList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.key.Namespace)); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) mustReconcile() {
	h.t.Helper()
	if _, err := h.reconcile(); err != nil {
		h.t.Fatal(err)
	}
}

// mountedSSHSecrets are the SSH Secrets the job's pods mount.
func (h *harness) mountedSSHSecrets() map[string]bool {
	out := map[string]bool{}
	for _, pod := range h.pods() {
		for _, v := range pod.Spec.Volumes {
			if v.Secret != nil && strings.Contains(v.Name, "ssh") {
				out[v.Secret.SecretName] = true
			}
		}
	}
	return out
}

// An MPI job's SSH Secret is created with metadata.generateName and no
// name of its own, so nobody can make it first; the next reconcile writes
// the name the API server chose into status, and only then are pods made,
// mounting it.
func TestMPISSHSecretIsNamedByTheAPIServer(t *testing.T) {
	var sc secretCreates
	h := newHarness(t, mpiJob(""), sc.funcs(), Options{})
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if sc.count() != 1 || sc.asked[0].Name != "" || sc.asked[0].GenerateName != "j-ssh-" {
		t.Fatalf("Secrets asked for: %+v; want one, with generateName j-ssh- and no name", sc.asked)
	}
	if h.creates != 0 {
		t.Fatalf("%d pods created before the job's status names its Secret", h.creates)
	}
	if res.RequeueAfter == 0 {
		t.Error("the reconcile that made the Secret comes back to record it")
	}
	secrets := h.secrets()
	if len(secrets) != 1 || !metav1.IsControlledBy(&secrets[0], h.job()) || len(secrets[0].Data[objects.SSHPrivateKey]) == 0 {
		t.Fatalf("want one Secret with keys, controlled by the job: %+v", secrets)
	}
	name := secrets[0].Name

	h.mustReconcile()
	if got := h.job().Status.MPI.SSHSecretName; got != name {
		t.Fatalf("status.mpi.sshSecretName = %q, want %q", got, name)
	}
	if h.creates != 0 {
		t.Fatalf("%d pods created by the plan that recorded the Secret", h.creates)
	}
	h.mustReconcile()
	if h.creates != 2 {
		t.Fatalf("the workers are created once status names the Secret: %d creates", h.creates)
	}
	if got := h.mountedSSHSecrets(); len(got) != 1 || !got[name] {
		t.Fatalf("the pods mount %v, want %s", got, name)
	}
	for _, pod := range h.pods() {
		h.setPhase(pod.Name, corev1.PodRunning)
	}
	for range 3 {
		h.mustReconcile()
	}
	if h.creates != 3 || sc.count() != 1 {
		t.Fatalf("%d pods and %d Secrets: want the launcher too, and one Secret", h.creates, sc.count())
	}
}

// A job whose status names its Secret never gets another, even from an
// operator that has just started; its pods mount the one named.
func TestMPISSHSecretInStatusIsNotMadeAgain(t *testing.T) {
	var sc secretCreates
	job := mpiJob("j-ssh-k7x2p")
	h := newHarness(t, job, sc.funcs(), Options{})
	for range 3 {
		h.mustReconcile()
	}
	if sc.count() != 0 {
		t.Fatalf("%d Secrets created for a job whose status names one", sc.count())
	}
	if got := h.mountedSSHSecrets(); h.creates != 2 || len(got) != 1 || !got["j-ssh-k7x2p"] {
		t.Fatalf("%d pods, mounting %v: want the workers, mounting j-ssh-k7x2p", h.creates, got)
	}
}

// An operator that stops between the Secret's create and the status write
// forgets the name: its successor makes another, and records that one. The
// first is the job's too, and goes with it.
func TestMPISSHSecretMadeAgainAfterACrash(t *testing.T) {
	var sc secretCreates
	h := newHarness(t, mpiJob(""), sc.funcs(), Options{})
	h.mustReconcile()
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock})
	h.mustReconcile()
	h.mustReconcile()
	secrets := h.secrets()
	if len(secrets) != 2 {
		t.Fatalf("%d Secrets, want the lost one and its replacement", len(secrets))
	}
	job := h.job()
	for _, s := range secrets {
		if !metav1.IsControlledBy(&s, job) {
			t.Errorf("Secret %s is not controlled by the job: the garbage collector would not delete it", s.Name)
		}
	}
	if got := job.Status.MPI.SSHSecretName; got != secrets[0].Name && got != secrets[1].Name || got == "" {
		t.Fatalf("status.mpi.sshSecretName = %q", got)
	}
	h.mustReconcile()
	if got := h.mountedSSHSecrets(); len(got) != 1 || !got[job.Status.MPI.SSHSecretName] {
		t.Fatalf("the pods mount %v, want the Secret status names", got)
	}
}

// An operator whose cache shows the job from before the write that named
// its Secret (another leader's write) asks the API server before it makes
// one, and makes none.
func TestMPISSHSecretNotMadeFromAStaleJob(t *testing.T) {
	var sc secretCreates
	var (
		mu    sync.Mutex
		stale *musterv1.TrainingJob
	)
	funcs := sc.funcs()
	funcs.Get = func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, o ...client.GetOption) error {
		mu.Lock()
		defer mu.Unlock()
		if j, ok := obj.(*musterv1.TrainingJob); ok && stale != nil {
			stale.DeepCopyInto(j)
			return nil
		}
		return c.Get(ctx, key, obj, o...)
	}
	h := newHarness(t, mpiJob(""), funcs, Options{})
	h.mustReconcile()
	before := h.job()
	h.mustReconcile()
	if h.job().Status.MPI.SSHSecretName == "" {
		t.Fatal("the Secret is not recorded")
	}
	mu.Lock()
	stale = before
	mu.Unlock()
	live := &liveReader{c: h.c, mu: &mu, stale: &stale}
	h.r = NewReconciler(h.c, h.rec, Options{Clock: h.r.opts.Clock, APIReader: live})
	h.mustReconcile()
	if sc.count() != 1 {
		t.Fatalf("%d Secrets made: a plan from the stale job made a second", sc.count())
	}
}

// liveReader reads the job as the API server has it, past the stale view
// the test's cache gives.
type liveReader struct {
	c     client.Client
	mu    *sync.Mutex
	stale **musterv1.TrainingJob
}

func (l *liveReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, o ...client.GetOption) error {
	l.mu.Lock()
	s := *l.stale
	*l.stale = nil
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		*l.stale = s
		l.mu.Unlock()
	}()
	return l.c.Get(ctx, key, obj, o...)
}

func (l *liveReader) List(ctx context.Context, list client.ObjectList, o ...client.ListOption) error {
	return l.c.List(ctx, list, o...)
}
