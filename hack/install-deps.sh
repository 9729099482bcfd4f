#!/usr/bin/env bash
# Installs the Debian packages the local cluster and the examples need:
# python3 with Debian's torch (CPU), iproute2, procps (the tests find pods'
# host processes), util-linux (nsenter, for kubectl exec on the process
# node) and tmux (the CLI's e2e tests drive muster in a real terminal).
# Does nothing when they are already there.
set -euo pipefail
need=()
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v pgrep >/dev/null 2>&1 || need+=(procps)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install: ${need[*]}" >&2
  exit 1
fi
echo ">> installing ${need[*]} (apt; python3-torch is large, a few minutes on a cold machine)" >&2
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
# Quiet when it works; when apt fails, its own output says why.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-deps: apt could not install ${need[*]} (its output is above)" >&2
  exit 1
fi
echo ">> installed ${need[*]} in $(( $(date +%s) - start ))s" >&2
