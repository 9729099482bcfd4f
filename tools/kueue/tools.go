//go:build tools

// Package kueue pins Kueue's controller manager, which the local cluster
// runs with `muster-dev up --kueue`. Kueue's module has no replace
// directives, but `go install` of it at a version is refused where the
// module proxy serves no version list, so it is built from this module:
// go build sigs.k8s.io/kueue/cmd/kueue.
package kueue

import _ "sigs.k8s.io/kueue/cmd/kueue"
