package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// crdName is the TrainingJob CRD.
const crdName = "trainingjobs.muster.dev"

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// storageMigration moves every stored TrainingJob to the version the CRD
// stores now, v1beta1, once, when the operator starts leading: each job
// stored in another version is written back unchanged, which the API
// server stores in the new version (a job already stored in it is left as
// it is: the same bytes are not written again). Then it drops the other
// versions from the CRD's status.storedVersions, which is what lets a later
// release stop serving them. A job that changes meanwhile has been written
// in the new version anyway.
type storageMigration struct {
	client client.Client
	reader client.Reader
}

// +kubebuilder:rbac:groups=muster.dev,resources=trainingjobs,verbs=update
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,resourceNames=trainingjobs.muster.dev,verbs=patch

// NeedLeaderElection: one replica migrates.
func (m *storageMigration) NeedLeaderElection() bool { return true }

// Start migrates, and says so in the log. A failure is logged and tried
// again, later and later, never fatal: every job still reads in every
// served version meanwhile. The first tries of an upgrade often fail: a
// job stored in the old version is converted to be written back, and the
// conversion webhook is called only once the certificate rotator has put
// its CA in the CRD.
func (m *storageMigration) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("storage-migration")
	for delay := migrationRetry; ; delay = min(2*delay, maxMigrationRetry) {
		n, err := m.migrate(ctx)
		if err == nil {
			if n >= 0 {
				log.Info("Stored TrainingJobs migrated", "version", musterv1.GroupVersion.Version, "jobs", n)
			}
			return nil
		}
		log.Error(err, "Migrating the stored TrainingJobs to "+musterv1.GroupVersion.Version, "retryIn", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// How soon a failed migration is tried again: at first, then at most.
const (
	migrationRetry    = 2 * time.Second
	maxMigrationRetry = 5 * time.Minute
)

// migrate rewrites the jobs and trims storedVersions; it returns how many
// jobs it wrote, or -1 when there was nothing to migrate.
func (m *storageMigration) migrate(ctx context.Context) (int, error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := m.reader.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		return 0, fmt.Errorf("reading the CRD: %w", err)
	}
	stored, _, err := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	if err != nil {
		return 0, err
	}
	want := []string{musterv1.GroupVersion.Version}
	if slices.Equal(stored, want) {
		return -1, nil
	}
	n := 0
	list := &musterv1.TrainingJobList{}
	for cont := ""; ; {
		if err := m.reader.List(ctx, list, client.Limit(200), client.Continue(cont)); err != nil {
			return n, fmt.Errorf("listing the jobs: %w", err)
		}
		for i := range list.Items {
			err := m.client.Update(ctx, &list.Items[i])
			switch {
			case err == nil:
				n++
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				// Written by someone else since it was listed, and so
				// stored in the new version; or gone.
			default:
				return n, fmt.Errorf("rewriting job %s/%s: %w", list.Items[i].Namespace, list.Items[i].Name, err)
			}
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	// A merge patch of storedVersions alone: the certificate rotator may
	// be writing the CRD's spec meanwhile.
	patch := fmt.Appendf(nil, `{"status":{"storedVersions":[%q]}}`, want[0])
	if err := m.client.Status().Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return n, fmt.Errorf("setting the CRD's storedVersions to %v: %w", want, err)
	}
	return n, nil
}
