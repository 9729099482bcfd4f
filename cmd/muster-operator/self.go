package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/version"
)

// Annotations the operator writes on its own pod at start: `muster version`
// reads which operator runs from them, since the binary is the only one
// that knows its build for sure (an image tag can be moved, a manifest
// edited).
const (
	versionAnnotation = "muster.dev/operator-version"
	commitAnnotation  = "muster.dev/operator-commit"
)

// selfAnnotator writes this operator's version onto its pod, once, on
// every replica (not only the leader: any of them may be the one asked).
// A pod it cannot write to (no POD_NAME, or no RBAC on its own namespace,
// as with --namespaces that leave it out) only costs `muster version` that
// line: it logs why and carries on.
type selfAnnotator struct {
	client client.Client
	log    logr.Logger
}

// NeedLeaderElection is false: every replica describes itself.
func (s *selfAnnotator) NeedLeaderElection() bool { return false }

// Start writes the annotations and returns.
func (s *selfAnnotator) Start(ctx context.Context) error {
	name := os.Getenv("POD_NAME")
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if name == "" || ns == "" {
		s.log.Info("Not recording the version on the operator's pod: POD_NAME or its namespace is unknown")
		return nil
	}
	v := version.Get()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		versionAnnotation: v.Version, commitAnnotation: v.Commit,
	}}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := s.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		s.log.Info("Could not record the version on the operator's pod", "pod", ns+"/"+name, "error", err.Error())
		return nil
	}
	// The node has set the image's digest by the time this container runs:
	// the log then says exactly which image this is.
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil && c.ImageID != "" {
			s.log.Info("Running from image", "image", c.Image, "imageID", c.ImageID, "version", v.Version, "commit", v.Commit)
		}
	}
	return nil
}

// ownImage is the image the operator's container runs from, read from its
// own pod: the restart watcher of a pod that restarts in place runs from
// it, whoever installed the operator and however the image was named (an
// install that rewrites the image, as kustomize does, cannot rewrite a
// flag that repeats it). Empty when the pod cannot be read; it says why.
func ownImage(ctx context.Context, cfg *rest.Config, log logr.Logger) string {
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if ns == "" {
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if name == "" || ns == "" {
		log.Info("No job restarts in place: --restart-watcher-image is unset and the operator's own pod is unknown (POD_NAME)")
		return ""
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Info("No job restarts in place: cannot read the operator's own pod", "error", err.Error())
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		log.Info("No job restarts in place: cannot read the operator's own pod", "pod", ns+"/"+name, "error", err.Error())
		return ""
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == operatorContainer || len(pod.Spec.Containers) == 1 {
			log.Info("Pods that restart in place run their restart watcher from the operator's image", "image", c.Image)
			return c.Image
		}
	}
	log.Info("No job restarts in place: the operator's pod has no container named " + operatorContainer)
	return ""
}

// operatorContainer is the operator's container in its Deployment.
const operatorContainer = "operator"
