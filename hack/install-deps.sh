#!/usr/bin/env bash
# Installs the Debian packages the local cluster and the examples need:
# python3 with Debian's torch (CPU), iproute2, procps (the tests find pods'
# host processes), util-linux (nsenter, for kubectl exec on the process
# node), tmux (the CLI's e2e tests drive muster in a real terminal), and
# OpenMPI, mpi4py and an SSH server for the MPI example (the process node's
# pods run the host's binaries: the host is their image).
# Does nothing when they are already there.
set -euo pipefail
need=()
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v pgrep >/dev/null 2>&1 || need+=(procps)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
/usr/bin/python3 -c 'import mpi4py' >/dev/null 2>&1 || need+=(python3-mpi4py)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
# sshd's privilege-separation directory, which its service would make at
# boot; the MPI example's workers run sshd directly.
privsep() { [ -d /run/sshd ] || { [ -x /usr/sbin/sshd ] && mkdir -p -m 0755 /run/sshd; } || true; }
if [ ${#need[@]} -eq 0 ]; then privsep; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install: ${need[*]}" >&2
  exit 1
fi
echo ">> installing ${need[*]} (apt; python3-torch is large, a few minutes on a cold machine)" >&2
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
# Quiet when it works; when apt fails, its own output says why.
log=$(mktemp)
# Installing openssh-server must not start a host sshd listening on every
# address: Debian's policy-rc.d hook says no service may start (one that is
# already there is left as it is).
policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\n# installed by muster install-deps for the length of one apt run\nexit 101\n' >"$policy"
  chmod 0755 "$policy"
fi
trap 'rm -f "$log" $policy' EXIT
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-deps: apt could not install ${need[*]} (its output is above)" >&2
  exit 1
fi
privsep
echo ">> installed ${need[*]} in $(( $(date +%s) - start ))s" >&2
