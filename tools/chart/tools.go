//go:build tools

package chart

// The helm command, at the version of the libraries the chart's tests use:
// the install test (test/install) and `make helm` build it from this module.
import _ "helm.sh/helm/v3/cmd/helm"
