// Package pvc is a tiny volume provisioner: it backs each claim of the
// muster-local class (or without a class) with a host folder and a hostPath
// PersistentVolume pre-bound to the claim, so kube-controller-manager's PV
// binder completes the bind and the scheduler can place the claim's pods.
package pvc

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/tools/procnode/internal/volume"
)

const (
	// ClassName is the storage class the node serves (and makes default).
	ClassName = "muster-local"
	// ProvisionerName names the node in the class and on its volumes.
	ProvisionerName = "muster.dev/procnode"

	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annNode          = "muster.dev/process-node"
	// annReclaim is the claim's class's reclaim policy, which the node
	// carries out itself: the volume's own policy is always Retain so that
	// kube-controller-manager never tries to delete a hostPath volume.
	annReclaim = "muster.dev/reclaim-policy"
)

// Provisioner watches claims and volumes.
type Provisioner struct {
	client   kubernetes.Interface
	node     string
	stateDir string
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	kick     chan struct{}
	// kept are the retained volumes already reported, to say so once.
	kept map[string]bool
}

// Run ensures the storage class exists and reconciles until ctx ends.
func Run(ctx context.Context, client kubernetes.Interface, node, stateDir string) error {
	if err := ensureClass(ctx, client); err != nil {
		return err
	}
	f := informers.NewSharedInformerFactory(client, 5*time.Minute)
	p := &Provisioner{
		client: client, node: node, stateDir: stateDir,
		claims:  f.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: f.Core().V1().PersistentVolumes().Lister(),
		classes: f.Storage().V1().StorageClasses().Lister(),
		kick:    make(chan struct{}, 1),
		kept:    map[string]bool{},
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.trigger() },
		UpdateFunc: func(any, any) { p.trigger() },
		DeleteFunc: func(any) { p.trigger() },
	}
	if _, err := f.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(h); err != nil {
		return err
	}
	if _, err := f.Core().V1().PersistentVolumes().Informer().AddEventHandler(h); err != nil {
		return err
	}
	if _, err := f.Storage().V1().StorageClasses().Informer().AddEventHandler(h); err != nil {
		return err
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	go p.loop(ctx)
	return nil
}

func (p *Provisioner) trigger() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *Provisioner) loop(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		if err := p.reconcile(ctx); err != nil {
			log.Printf("provisioner: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
		}
	}
}

func ensureClass(ctx context.Context, c kubernetes.Interface) error {
	_, err := c.StorageV1().StorageClasses().Get(ctx, ClassName, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	mode := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       ProvisionerName,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	}
	_, err = c.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ours reports whether the node should provision the claim: one without
// a class, of the node's own class, or of any class whose provisioner is
// the node (a class of the user's with reclaimPolicy Retain, say). class is
// the claim's class, nil when it names none or one that does not exist.
func ours(c *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) bool {
	sc := c.Spec.StorageClassName
	switch {
	case sc == nil || *sc == "" || *sc == ClassName:
		return true
	case class != nil:
		return class.Provisioner == ProvisionerName
	}
	return false
}

// reclaimPolicy is what happens to a claim's data when the claim goes: its
// class's policy, Delete (the default of a class) without one.
func reclaimPolicy(class *storagev1.StorageClass) corev1.PersistentVolumeReclaimPolicy {
	if class != nil && class.ReclaimPolicy != nil {
		return *class.ReclaimPolicy
	}
	return corev1.PersistentVolumeReclaimDelete
}

// classOf is the claim's class, or nil.
func (p *Provisioner) classOf(c *corev1.PersistentVolumeClaim) *storagev1.StorageClass {
	name := ClassName
	if c.Spec.StorageClassName != nil && *c.Spec.StorageClassName != "" {
		name = *c.Spec.StorageClassName
	}
	if p.classes == nil {
		return nil
	}
	class, err := p.classes.Get(name)
	if err != nil {
		return nil
	}
	return class
}

func volumeName(c *corev1.PersistentVolumeClaim) string { return "pvc-" + string(c.UID) }

// reconcile provisions volumes for new claims and removes the volumes of
// claims that are gone.
func (p *Provisioner) reconcile(ctx context.Context) error {
	claims, err := p.claims.List(labels.Everything())
	if err != nil {
		return err
	}
	p.provisionPending(ctx, claims)
	pvs, err := p.volumes.List(labels.Everything())
	if err != nil {
		return err
	}
	current := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range claims {
		current[c.Namespace+"/"+c.Name] = c
	}
	for _, pv := range pvs {
		if pv.Annotations[annProvisionedBy] != ProvisionerName || pv.Annotations[annNode] != p.node || pv.Spec.ClaimRef == nil {
			continue
		}
		ref := pv.Spec.ClaimRef
		c := current[ref.Namespace+"/"+ref.Name]
		if c != nil && c.UID == ref.UID {
			continue
		}
		p.release(ctx, pv, c)
	}
	return nil
}

// provisionPending creates a volume for each of our claims that has none.
func (p *Provisioner) provisionPending(ctx context.Context, claims []*corev1.PersistentVolumeClaim) {
	for _, c := range claims {
		if !ours(c, p.classOf(c)) || c.Spec.VolumeName != "" || c.DeletionTimestamp != nil {
			continue
		}
		if _, err := p.volumes.Get(volumeName(c)); err == nil {
			continue
		}
		if err := p.provision(ctx, c); err != nil {
			log.Printf("provisioner: claim %s/%s: %v", c.Namespace, c.Name, err)
		}
	}
}

// release deletes the volume of a claim that is gone, and its data unless a
// new claim of the same name (sameName, nil if none) already uses the folder.
// A volume whose class retains data is left as it is (Released), and its
// folder with it: a new claim of the same name finds the data again.
func (p *Provisioner) release(ctx context.Context, pv *corev1.PersistentVolume, sameName *corev1.PersistentVolumeClaim) {
	if pv.Annotations[annReclaim] == string(corev1.PersistentVolumeReclaimRetain) {
		if !p.kept[pv.Name] {
			p.kept[pv.Name] = true
			log.Printf("provisioner: claim %s/%s is gone; keeping %s and its data (reclaim policy Retain)",
				pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Name)
		}
		return
	}
	err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Printf("provisioner: deleting %s: %v", pv.Name, err)
		return
	}
	if sameName == nil && pv.Spec.HostPath != nil && p.inStateDir(pv.Spec.HostPath.Path) {
		if err := os.RemoveAll(pv.Spec.HostPath.Path); err != nil {
			log.Printf("provisioner: removing %s: %v", pv.Spec.HostPath.Path, err)
		}
	}
}

func (p *Provisioner) inStateDir(path string) bool {
	base := filepath.Join(p.stateDir, "pvc") + string(filepath.Separator)
	return strings.HasPrefix(filepath.Clean(path), base)
}

func (p *Provisioner) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	dir := volume.ClaimDir(p.stateDir, c.Namespace, c.Name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	_ = os.Chmod(dir, 0o777) // any runAsUser may write, as with emptyDir
	size, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		size = resource.MustParse("1Gi")
	}
	modes := c.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	fsMode := corev1.PersistentVolumeFilesystem
	dirType := corev1.HostPathDirectoryOrCreate
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: volumeName(c),
			Annotations: map[string]string{annProvisionedBy: ProvisionerName, annNode: p.node,
				annReclaim: string(reclaimPolicy(p.classOf(c)))},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			VolumeMode:                    &fsMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID,
			},
			// The folder exists on this node only.
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{p.node},
				}}}},
			}},
		},
	}
	_, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating volume: %w", err)
	}
	log.Printf("provisioner: created %s for claim %s/%s at %s", pv.Name, c.Namespace, c.Name, dir)
	return nil
}
