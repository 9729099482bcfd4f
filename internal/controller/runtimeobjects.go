package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;create

// ensureRuntimeObjects makes the objects the job's runtime needs before
// its pods (hosts files, hostfile, a ServiceAccount that may list pods),
// each owned by the job. It runs only when pods are about to be created, so
// a job's steady state costs nothing, and it reads from the API server
// rather than a cache: caching every ConfigMap of the cluster to save a read
// per pod batch is the worse trade. A ConfigMap whose content changed (a
// role resized) is updated. An MPI job's SSH Secret is not among them: it
// is made once, when the plan asks for it (createSSHSecret).
func (r *Reconciler) ensureRuntimeObjects(ctx context.Context, job *musterv1.TrainingJob) error {
	desired := objects.DesiredRuntimeObjects(topology.Effective(job))
	reader := r.opts.APIReader
	var errs []error
	for _, want := range desired {
		if err := r.ensureObject(ctx, reader, job, want); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) ensureObject(ctx context.Context, reader client.Reader, job *musterv1.TrainingJob, want client.Object) error {
	log := ctrl.LoggerFrom(ctx)
	got, ok := want.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%s cannot be copied", kindName(want))
	}
	err := reader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		log.V(2).Info("Creating runtime object", "object", kindName(want))
		err := r.client.Create(ctx, want)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			r.refused(job, plan.CreateFailure{Object: kindName(want), Err: err})
			return fmt.Errorf("creating %s: %w", kindName(want), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading %s: %w", kindName(want), err)
	}
	if !metav1.IsControlledBy(got, job) {
		r.refused(job, plan.CreateFailure{Object: kindName(want), NameTaken: true,
			Err: fmt.Errorf("%s exists and is not the job's", kindName(want))})
		return nil
	}
	if have, ok := got.(*corev1.ConfigMap); ok {
		wantCM, _ := want.(*corev1.ConfigMap)
		if !maps.Equal(have.Data, wantCM.Data) {
			log.V(2).Info("Updating runtime ConfigMap", "name", have.Name)
			have.Data = wantCM.Data
			if err := r.client.Update(ctx, have); err != nil && !apierrors.IsConflict(err) {
				return fmt.Errorf("updating %s: %w", kindName(want), err)
			}
		}
	}
	return nil
}

// kindName names an object for events and conditions: "ConfigMap pet-svc",
// or for one the API server has yet to name, "Secret pet-ssh-*".
func kindName(obj client.Object) string {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap " + obj.GetName()
	case *corev1.Secret:
		if obj.GetName() == "" {
			return "Secret " + obj.GetGenerateName() + "*"
		}
		return "Secret " + obj.GetName()
	case *corev1.ServiceAccount:
		return "ServiceAccount " + obj.GetName()
	case *rbacv1.Role:
		return "Role " + obj.GetName()
	case *rbacv1.RoleBinding:
		return "RoleBinding " + obj.GetName()
	case *corev1.Service:
		return "Service " + obj.GetName()
	case *appsv1.Deployment:
		return "Deployment " + obj.GetName()
	}
	return fmt.Sprintf("%T %s", obj, obj.GetName())
}
