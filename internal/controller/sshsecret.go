package controller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/objects"
)

// The operator creates Secrets and never reads one.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create

// createSSHSecret creates an MPI job's SSH Secret, with fresh keys, under
// the name the API server picks (metadata.generateName), and keeps that
// name for the job's next plan, which records it in status. The operator
// may create Secrets but not read them, so nothing else would tell it.
//
// The create and that status write are two requests. An operator that
// stops between them, or loses its leadership, forgets the name, and the
// next plan asks for another Secret; the first is left unused, and goes
// with the job, which controls it (the garbage collector deletes it).
func (r *Reconciler) createSSHSecret(ctx context.Context, job *musterv1.TrainingJob, s *corev1.Secret) error {
	if err := objects.GenerateSSHKeys(s); err != nil {
		return err
	}
	if err := r.client.Create(ctx, s); err != nil {
		r.refused(job, plan.CreateFailure{Object: kindName(s), Err: err})
		return fmt.Errorf("creating %s: %w", kindName(s), err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Created runtime object", "object", kindName(s))
	r.sshSecrets.made(job, s.Name)
	return nil
}

// sshSecrets are the SSH Secrets this process made whose names the status
// of their job did not hold yet when it was last read, by job.
type sshSecrets struct {
	mu   sync.Mutex
	jobs map[types.NamespacedName]madeSecret
}

// madeSecret is one job's Secret, by the job's UID: a job deleted and made
// again under the same name does not inherit it.
type madeSecret struct {
	uid  types.UID
	name string
}

func newSSHSecrets() *sshSecrets {
	return &sshSecrets{jobs: map[types.NamespacedName]madeSecret{}}
}

// made keeps the name of the Secret just made for job.
func (s *sshSecrets) made(job *musterv1.TrainingJob, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[client.ObjectKeyFromObject(job)] = madeSecret{uid: job.UID, name: name}
}

// unrecorded is the Secret made for job that job's status does not name,
// for its plan to record, or "". It is kept until a status read names a
// Secret, not only until one is written: a plan made from a job the cache
// shows from before that write records it again, and its write conflicts,
// rather than ask for another. Once the status names a Secret, the one kept
// is forgotten: it is that one, or one whose name an operator wrote before
// this one made it.
func (s *sshSecrets) unrecorded(job *musterv1.TrainingJob) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := client.ObjectKeyFromObject(job)
	kept, ok := s.jobs[key]
	if !ok {
		return ""
	}
	if kept.uid != job.UID || job.Status.MPI.SSHSecretName != "" {
		delete(s.jobs, key)
		return ""
	}
	return kept.name
}

// forget drops what is kept for a job that is gone.
func (s *sshSecrets) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, key)
}
