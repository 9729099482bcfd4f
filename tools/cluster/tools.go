//go:build tools

// Package cluster pins the Kubernetes control-plane commands that the local
// cluster and the integration tests run. It is its own module so the
// operator's module never depends on k8s.io/kubernetes.
package cluster

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
