#!/usr/bin/env bash
# Builds the control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl) from the module proxy into a folder of $MUSTER_CACHE
# keyed by version, so only the first run pays for the build, and prints that
# folder on stdout (progress goes to stderr); -extras builds the gang
# schedulers and Kueue instead. The builder is tools/devcluster
# (also behind `muster-dev build`); this script only runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/buildcluster "$@"
