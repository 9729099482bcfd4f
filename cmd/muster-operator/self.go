package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
