#!/usr/bin/env bash
# Builds the control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl) from the module proxy into a folder keyed by version,
# so only the first run pays for the build. Prints the folder on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
K8S_VERSION=${K8S_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
cache=${MUSTER_CACHE:-$root/.cache}
out="$cache/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
want=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)

missing=()
for b in "${want[@]}"; do [ -x "$out/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then echo "$out"; exit 0; fi

mkdir -p "$out"
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="$ld -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
cd "$root/tools/cluster"
for b in "${missing[@]}"; do
  start=$(date +%s)
  echo ">> building $b ($K8S_VERSION / etcd $ETCD_VERSION)" >&2
  tmp="$out/.$b.tmp"
  if [ "$b" = etcd ]; then
    go build -trimpath -ldflags "-s -w" -o "$tmp" ./cmd/etcd
  else
    go build -trimpath -ldflags "$ld" -o "$tmp" "k8s.io/kubernetes/cmd/$b"
  fi
  mv "$tmp" "$out/$b"   # mv, never cp over a binary that may be running
  echo ">> built $b in $(( $(date +%s) - start ))s" >&2
done
echo "$out"
